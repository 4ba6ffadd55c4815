import { json } from "../../../../lib/http.ts";
import type { Handlers } from "../../../../lib/router.ts";
import { sessionNotFound } from "../../../../lib/errors.ts";
import { deleteSession } from "../../../../lib/session_removal.ts";

/** One session's summary, and deleting an offline session with its whole history. */
export const handler: Handlers = {
  GET(ctx) {
    const session = ctx.app.sessions.get(ctx.params.id);
    if (!session) throw sessionNotFound(ctx.params.id);
    return json(session);
  },
  DELETE(ctx) {
    deleteSession(ctx.app, ctx.params.id);
    ctx.audit("delete", { sessionId: ctx.params.id });
    return json({ ok: true });
  },
};
