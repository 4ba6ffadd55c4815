import { ChangesQuery, parseWith } from "../../../../../lib/protocol.ts";
import { json } from "../../../../../lib/http.ts";
import { InvalidError } from "../../../../../lib/errors.ts";
import type { Handlers } from "../../../../../lib/router.ts";

/** What changed in the session's working copy (`?scope=all|uncommitted`). */
export const handler: Handlers = {
  async GET(ctx) {
    const query = parseWith(ChangesQuery, Object.fromEntries(ctx.url.searchParams));
    if (!query.ok) throw new InvalidError(query.message);
    return json(await ctx.app.changes.changes(ctx.params.id, query.value.scope));
  },
};
