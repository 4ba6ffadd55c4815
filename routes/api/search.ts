import { parseWith, SearchQuery } from "../../lib/protocol.ts";
import { InvalidError } from "../../lib/errors.ts";
import { json } from "../../lib/http.ts";
import type { Handlers } from "../../lib/router.ts";

/** Ranked hits over every session's messages, tool calls and names (viewer). */
export const handler: Handlers = {
  GET(ctx) {
    const query = parseWith(SearchQuery, Object.fromEntries(ctx.url.searchParams));
    if (!query.ok) throw new InvalidError(query.message);
    const { q, sessionId, type, limit, before } = query.value;
    return json(ctx.app.search.search({ q, sessionId, type, limit, cursor: before }));
  },
};
