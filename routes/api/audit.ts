import { AuditQuery, parseWith } from "../../lib/protocol.ts";
import { json } from "../../lib/http.ts";
import { InvalidError } from "../../lib/errors.ts";
import type { Handlers } from "../../lib/router.ts";

/** The audit log (admin), oldest first from `after`. */
export const handler: Handlers = {
  async GET(ctx) {
    const query = parseWith(AuditQuery, Object.fromEntries(ctx.url.searchParams));
    if (!query.ok) throw new InvalidError(query.message);
    return json(await ctx.app.audit.page(query.value.after, query.value.limit));
  },
};
