import { json } from "../../../../lib/http.ts";
import { ConflictError, sessionNotFound } from "../../../../lib/errors.ts";
import type { Handlers } from "../../../../lib/router.ts";
import { deleteSession } from "../../../../lib/session_removal.ts";

/** One session's summary, and deleting an offline session with its whole history. */
export const handler: Handlers = {
  GET(ctx) {
    const session = ctx.app.store.getSession(ctx.params.id);
    if (!session) throw sessionNotFound(ctx.params.id);
    return json(session);
  },
  DELETE(ctx) {
    const id = ctx.params.id;
    const result = deleteSession(ctx.app, id);
    if (result === "online") {
      throw new ConflictError(`Session "${id}" is online: end it (or stop its container) first`);
    }
    if (result === "missing") throw sessionNotFound(id);
    return json({ ok: true });
  },
};
