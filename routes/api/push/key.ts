import { json } from "../../../lib/http.ts";
import type { Handlers } from "../../../lib/router.ts";

/** The VAPID public key a browser subscribes with (`applicationServerKey`). */
export const handler: Handlers = {
  GET: async (ctx) => json({ publicKey: await ctx.app.push.publicKey() }),
};
