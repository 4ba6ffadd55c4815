import { json } from "../../../../lib/http.ts";
import type { Handlers } from "../../../../lib/router.ts";

/** Send an endpoint a signed test delivery (admin), through the outbox like any event: 202 with its id. */
export const handler: Handlers = {
  async POST(ctx) {
    const id = await ctx.app.webhooks.test(ctx.params.id, ctx.principal?.name ?? "admin");
    ctx.audit("webhook.test", { detail: { id: ctx.params.id, deliveryId: id } });
    return json({ ok: true, deliveryId: id }, 202);
  },
};
