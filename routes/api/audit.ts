import { z } from "zod";
import { parseWith } from "../../lib/protocol.ts";
import { json } from "../../lib/http.ts";
import { InvalidError } from "../../lib/errors.ts";
import type { Handlers } from "../../lib/router.ts";

const AuditQuery = z.object({
  after: z.coerce.number().int().nonnegative().default(0),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});

/** The audit log (admin), oldest first from `after`. */
export const handler: Handlers = {
  GET(ctx) {
    const query = parseWith(AuditQuery, Object.fromEntries(ctx.url.searchParams));
    if (!query.ok) throw new InvalidError(query.message);
    return json(ctx.app.audit.page(query.value.after, query.value.limit));
  },
};
