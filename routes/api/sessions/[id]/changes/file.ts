import { ChangesFileQuery, parseWith } from "../../../../../lib/protocol.ts";
import { json } from "../../../../../lib/http.ts";
import { InvalidError } from "../../../../../lib/errors.ts";
import type { Handlers } from "../../../../../lib/router.ts";

/** One changed file of the session with its whole diff (`?path=P&scope=S`), collapsed ones included. */
export const handler: Handlers = {
  async GET(ctx) {
    const query = parseWith(ChangesFileQuery, Object.fromEntries(ctx.url.searchParams));
    if (!query.ok) throw new InvalidError(query.message);
    const { path, scope } = query.value;
    return json(await ctx.app.changes.file(ctx.params.id, scope, path));
  },
};
