import { ApprovalsQuery, parseWith } from "../../../lib/protocol.ts";
import { json } from "../../../lib/http.ts";
import { InvalidError } from "../../../lib/errors.ts";
import type { Handlers } from "../../../lib/router.ts";

/** Approvals of every session, oldest first (`?state=pending` for what waits). */
export const handler: Handlers = {
  async GET(ctx) {
    const query = parseWith(ApprovalsQuery, Object.fromEntries(ctx.url.searchParams));
    if (!query.ok) throw new InvalidError(query.message);
    return json(await ctx.app.approvals.list({ state: query.value.state }));
  },
};
