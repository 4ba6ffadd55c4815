import { PolicyBody } from "../../../../lib/protocol.ts";
import { json, readJson } from "../../../../lib/http.ts";
import type { Handlers } from "../../../../lib/router.ts";

/** Replace a session's ask set (the tools that wait for approval); an online plugin hears of it at once. */
export const handler: Handlers = {
  async PUT(ctx) {
    const { ask } = await readJson(ctx.req, PolicyBody);
    const set = ctx.app.sessions.setPolicy(ctx.params.id, ask);
    ctx.audit("policy", { sessionId: ctx.params.id, detail: { ask: set } });
    return json({ ask: set });
  },
};
