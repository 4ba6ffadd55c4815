import { json, readJson } from "../../../lib/http.ts";
import { GitlabSecretBody } from "../../../lib/hooks/hooks.ts";
import type { Handlers } from "../../../lib/router.ts";

/** The GitLab hook secret (admin): whether one is set, or set it (never shown back). */
export const handler: Handlers = {
  GET: (ctx) => json({ enabled: ctx.app.hooks.gitlabSecret() !== null, path: "/hooks/gitlab" }),
  async PUT(ctx) {
    const { secret } = await readJson(ctx.req, GitlabSecretBody);
    const { fromEnv } = ctx.app.hooks.setGitlabSecret(secret);
    ctx.audit("hook.gitlab.secret", { detail: { fromEnv } });
    return json({ ok: true, enabled: true, overriddenByEnv: fromEnv });
  },
};
