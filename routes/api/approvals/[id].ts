import { DecisionBody } from "../../../lib/protocol.ts";
import { json, readJson } from "../../../lib/http.ts";
import type { Handlers } from "../../../lib/router.ts";
import { actorName } from "../../../lib/auth.ts";

/** Answer an approval: first answer wins (the same again → 200, the other → 409). */
export const handler: Handlers = {
  async POST(ctx) {
    const body = await readJson(ctx.req, DecisionBody);
    const approval = await ctx.app.approvals.decide(ctx.params.id, body, actorName(ctx.principal));
    ctx.audit(body.decision, { sessionId: approval.sessionId, detail: { approvalId: approval.id, ...body } });
    return json(approval);
  },
};
