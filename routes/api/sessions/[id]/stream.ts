import { sessionNotFound } from "../../../../lib/errors.ts";
import { resumePoint, sseResponse } from "../../../../lib/sse.ts";
import { openSessionStream } from "../../../../lib/sse_session.ts";
import type { Handlers } from "../../../../lib/router.ts";

/** A session's events as Server-Sent Events, resumable with `Last-Event-ID` or `?after=N`. */
export const handler: Handlers = {
  GET(ctx) {
    const after = resumePoint(ctx.req, ctx.url);
    if (!ctx.app.store.getSession(ctx.params.id)) throw sessionNotFound(ctx.params.id);
    return sseResponse(openSessionStream(ctx.app, ctx.params.id, after));
  },
};
