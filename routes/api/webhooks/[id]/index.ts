import type { Handlers } from "../../../../lib/router.ts";

/** Remove an endpoint (admin); what it still had queued is dropped. */
export const handler: Handlers = {
  async DELETE(ctx) {
    await ctx.app.webhooks.remove(ctx.params.id);
    ctx.audit("webhook.remove", { detail: { id: ctx.params.id } });
    return new Response(null, { status: 204 });
  },
};
