import { EventsQuery, parseWith } from "../../../../lib/protocol.ts";
import { InvalidError, sessionNotFound } from "../../../../lib/errors.ts";
import type { Handlers } from "../../../../lib/router.ts";

/** A page of a session's persisted events, seq ascending. */
export const handler: Handlers = {
  GET(ctx) {
    const query = parseWith(EventsQuery, Object.fromEntries(ctx.url.searchParams));
    if (!query.ok) throw new InvalidError(query.message);
    if (!ctx.app.store.getSession(ctx.params.id)) {
      throw sessionNotFound(ctx.params.id);
    }
    // The store hands back the JSON text of the page, so rows are never parsed and re-encoded here.
    return new Response(ctx.app.store.eventsJson(ctx.params.id, query.value), {
      headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" },
    });
  },
};
