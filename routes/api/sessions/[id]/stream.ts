import { sessionNotFound } from "../../../../lib/errors.ts";
import { resumePoint, sseResponse } from "../../../../lib/sse.ts";
import { openSessionStream } from "../../../../lib/sse_session.ts";
import type { Handlers } from "../../../../lib/router.ts";

/** A session's events as Server-Sent Events, resumable with `Last-Event-ID` or `?after=N`. */
export const handler: Handlers = {
  GET(ctx) {
    const after = resumePoint(ctx.req, ctx.url);
    if (!ctx.app.store.getSession(ctx.params.id)) throw sessionNotFound(ctx.params.id);
    const stream = openSessionStream(ctx.app, ctx.params.id, after);
    // A revoked token ends the streams it opened, at once.
    stream.onEnd(ctx.app.tokens.closeOnRevoke(ctx.principal, () => stream.close()));
    return sseResponse(stream);
  },
};
