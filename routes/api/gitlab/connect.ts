import { GitlabConnectBody } from "../../../lib/protocol.ts";
import { json, readJson } from "../../../lib/http.ts";
import type { Handlers } from "../../../lib/router.ts";

/** Connect GitLab with a personal access token (validated, then stored), or forget it. */
export const handler: Handlers = {
  async POST(ctx) {
    const { token } = await readJson(ctx.req, GitlabConnectBody);
    const { username } = await ctx.app.gitlab.connect(token);
    ctx.audit("gitlab.connect", { detail: { username } });
    return json({ username });
  },
  async DELETE(ctx) {
    await ctx.app.gitlab.disconnect();
    ctx.audit("gitlab.disconnect");
    return json({ ok: true });
  },
};
