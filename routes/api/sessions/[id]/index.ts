import { json } from "../../../../lib/http.ts";
import type { Handlers } from "../../../../lib/router.ts";
import { sessionNotFound } from "../../../../lib/errors.ts";
import { discardSession } from "../../../../lib/session_removal.ts";

/** One session's summary, and deleting an offline session with its whole history (and a spawned one's storage). */
export const handler: Handlers = {
  GET(ctx) {
    const session = ctx.app.sessions.get(ctx.params.id);
    if (!session) throw sessionNotFound(ctx.params.id);
    return json(session);
  },
  // A stopped or crashed spawned session is discarded: its worker's storage goes too.
  async DELETE(ctx) {
    const spawned = await discardSession(ctx.app, ctx.params.id);
    ctx.audit(spawned ? "discard" : "delete", { sessionId: ctx.params.id });
    return json({ ok: true });
  },
};
