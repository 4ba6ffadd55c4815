import { ApprovalsQuery, parseWith } from "../../../../lib/protocol.ts";
import { json } from "../../../../lib/http.ts";
import { InvalidError, sessionNotFound } from "../../../../lib/errors.ts";
import type { Handlers } from "../../../../lib/router.ts";

/** One session's approvals, oldest first (every state unless `?state=`). */
export const handler: Handlers = {
  async GET(ctx) {
    const query = parseWith(ApprovalsQuery, Object.fromEntries(ctx.url.searchParams));
    if (!query.ok) throw new InvalidError(query.message);
    if (!ctx.app.sessions.get(ctx.params.id)) throw sessionNotFound(ctx.params.id);
    return json(await ctx.app.approvals.list({ sessionId: ctx.params.id, state: query.value.state }));
  },
};
