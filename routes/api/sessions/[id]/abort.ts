import { json, readJson } from "../../../../lib/http.ts";
import { actorName } from "../../../../lib/auth.ts";
import { AbortBody } from "../../../../lib/protocol.ts";
import type { Handlers } from "../../../../lib/router.ts";

/** Abort the current run of a live session. */
export const handler: Handlers = {
  async POST(ctx) {
    // The body is optional (`{force}` while someone else holds the wheel).
    const { force } = await readJson(ctx.req, AbortBody);
    if (ctx.app.presence.checkSteer(ctx.params.id, actorName(ctx.principal), force)) {
      ctx.audit("wheel.override", { sessionId: ctx.params.id, detail: { action: "abort" } });
    }
    const commandId = crypto.randomUUID();
    ctx.app.sessions.send(ctx.params.id, { type: "abort", commandId });
    ctx.audit("abort", { sessionId: ctx.params.id });
    return json({ ok: true, commandId });
  },
};
