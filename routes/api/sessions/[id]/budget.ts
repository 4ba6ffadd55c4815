import { BudgetBody } from "../../../../lib/protocol.ts";
import { json, readJson } from "../../../../lib/http.ts";
import type { Handlers } from "../../../../lib/router.ts";

/** A session's budget and what it spent (counted from its log); setting it reaches a live plugin at once. */
export const handler: Handlers = {
  GET(ctx) {
    return json(ctx.app.budgets.get(ctx.params.id));
  },
  async PUT(ctx) {
    const body = await readJson(ctx.req, BudgetBody);
    const view = await ctx.app.budgets.put(ctx.params.id, body);
    ctx.audit("budget", { sessionId: ctx.params.id, detail: { budget: body, spent: view.spent } });
    return json(view);
  },
};
