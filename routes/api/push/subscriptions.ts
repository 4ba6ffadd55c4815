import { json, readJson } from "../../../lib/http.ts";
import { InvalidError } from "../../../lib/errors.ts";
import { PushEndpointQuery, PushSubscribeBody } from "../../../lib/protocol.ts";
import type { Handlers } from "../../../lib/router.ts";

/**
 * This browser's push subscription (any signed-in person: notifications are theirs): add or replace it with the
 * kinds wanted (POST), read those kinds (GET `?endpoint=`), or remove it (DELETE `?endpoint=`).
 */
export const handler: Handlers = {
  async GET(ctx) {
    const q = PushEndpointQuery.safeParse(Object.fromEntries(ctx.url.searchParams));
    if (!q.success) throw new InvalidError("endpoint is required");
    return json({ kinds: await ctx.app.push.kindsOf(q.data.endpoint) });
  },
  async POST(ctx) {
    const body = await readJson(ctx.req, PushSubscribeBody);
    const saved = await ctx.app.push.subscribe(body, ctx.principal!.name);
    ctx.audit("push.subscribe", { detail: { origin: new URL(saved.endpoint).origin, kinds: saved.kinds } });
    return json(saved, 201);
  },
  async DELETE(ctx) {
    const q = PushEndpointQuery.safeParse(Object.fromEntries(ctx.url.searchParams));
    if (!q.success) throw new InvalidError("endpoint is required");
    await ctx.app.push.unsubscribe(q.data.endpoint);
    return new Response(null, { status: 204 });
  },
};
