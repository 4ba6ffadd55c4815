import { json } from "../../../../lib/http.ts";
import type { Handlers } from "../../../../lib/router.ts";

/** Abort the current run of a live session. */
export const handler: Handlers = {
  POST(ctx) {
    const commandId = crypto.randomUUID();
    ctx.app.sessions.send(ctx.params.id, { type: "abort", commandId });
    ctx.audit("abort", { sessionId: ctx.params.id });
    return json({ ok: true, commandId });
  },
};
