import { resumePoint, sseResponse } from "../../lib/sse.ts";
import type { Handlers } from "../../lib/router.ts";

/** The daemon-wide stream: session list changes, approvals and spawn jobs, resumable with `Last-Event-ID`. */
export const handler: Handlers = {
  GET(ctx) {
    const stream = ctx.app.feed.open(resumePoint(ctx.req, ctx.url));
    // A revoked token ends the streams it opened, at once.
    stream.onEnd(ctx.app.tokens.closeOnRevoke(ctx.principal, () => stream.close()));
    return sseResponse(stream);
  },
};
