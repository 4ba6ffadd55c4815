import { EventsQuery, parseWith } from "../../../../lib/protocol.ts";
import { HttpError, NotFoundError } from "../../../../lib/http.ts";
import type { Handlers } from "../../../../lib/router.ts";

/** A page of a session's persisted events, seq ascending. */
export const handler: Handlers = {
  GET(ctx) {
    const query = parseWith(EventsQuery, Object.fromEntries(ctx.url.searchParams));
    if (!query.ok) throw new HttpError(400, query.message);
    if (!ctx.app.store.getSession(ctx.params.id)) {
      throw new NotFoundError(`Session "${ctx.params.id}" does not exist`);
    }
    // The store hands back the JSON text of the page, so rows are never parsed and re-encoded here.
    return new Response(ctx.app.store.eventsJson(ctx.params.id, query.value), {
      headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" },
    });
  },
};
