import { json, readJson } from "../../../lib/http.ts";
import { GitlabSecretBody } from "../../../lib/hooks/gitlab_secret.ts";
import type { Handlers } from "../../../lib/router.ts";

/**
 * The GitLab hook secret (admin): whether one is set and where from, set it, or clear it. The secret itself is
 * never shown back; `source` is `env` while `LVMH_GITLAB_HOOK_SECRET` decides (the API cannot change it then).
 */
export const handler: Handlers = {
  GET: (ctx) => {
    const source = ctx.app.hooks.gitlabSecret.source();
    return json({ enabled: source !== null, source, path: "/hooks/gitlab" });
  },
  async PUT(ctx) {
    const { secret } = await readJson(ctx.req, GitlabSecretBody);
    const { fromEnv } = await ctx.app.hooks.gitlabSecret.set(secret);
    ctx.audit("hook.gitlab.secret", { detail: { fromEnv } });
    return json({ ok: true, enabled: true, overriddenByEnv: fromEnv });
  },
  async DELETE(ctx) {
    const { fromEnv } = await ctx.app.hooks.gitlabSecret.clear();
    ctx.audit("hook.gitlab.secret.clear", { detail: { fromEnv } });
    return json({ ok: true, enabled: fromEnv, overriddenByEnv: fromEnv });
  },
};
