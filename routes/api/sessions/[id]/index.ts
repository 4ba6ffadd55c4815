import { HttpError, json, NotFoundError } from "../../../../lib/http.ts";
import type { Handlers } from "../../../../lib/router.ts";

/** One session's summary, and deleting an offline session with its whole history. */
export const handler: Handlers = {
  GET(ctx) {
    const session = ctx.app.store.getSession(ctx.params.id);
    if (!session) throw new NotFoundError(`Session "${ctx.params.id}" does not exist`);
    return json(session);
  },
  DELETE(ctx) {
    const id = ctx.params.id;
    // A live plugin would only bring the session back, with a history that no longer starts at seq 1.
    if (ctx.app.live.isOnline(id)) {
      throw new HttpError(409, `Session "${id}" is online: end it (or stop its container) first`);
    }
    ctx.app.ingest.flush(); // nothing of it may still wait for the disk
    if (!ctx.app.store.deleteSession(id)) throw new NotFoundError(`Session "${id}" does not exist`);
    ctx.app.ingest.forget(id);
    ctx.app.onSessionsChanged();
    return json({ ok: true });
  },
};
