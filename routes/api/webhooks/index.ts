import { json, readJson } from "../../../lib/http.ts";
import { EndpointBody } from "../../../lib/protocol.ts";
import type { Handlers } from "../../../lib/router.ts";

/** Outbound webhook endpoints (admin): list them (no secrets), or register one (its secret is shown only here). */
export const handler: Handlers = {
  GET: async (ctx) => json(await ctx.app.webhooks.list()),
  async POST(ctx) {
    const body = await readJson(ctx.req, EndpointBody);
    const created = await ctx.app.webhooks.create(body);
    // The URL may carry a key in its query: the audit row keeps only its origin.
    ctx.audit("webhook.add", {
      detail: { id: created.id, origin: new URL(created.url).origin, events: body.events },
    });
    return json(created, 201);
  },
};
