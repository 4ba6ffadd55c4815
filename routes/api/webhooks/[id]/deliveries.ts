import { json } from "../../../../lib/http.ts";
import type { Handlers } from "../../../../lib/router.ts";

/** An endpoint's delivery log (admin): the latest attempts with status and latency, newest first. */
export const handler: Handlers = {
  GET: async (ctx) => json(await ctx.app.webhooks.log(ctx.params.id)),
};
