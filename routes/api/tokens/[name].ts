import { json } from "../../../lib/http.ts";
import type { Handlers } from "../../../lib/router.ts";

/** Revoke a named token (admin): it stops working at once, on open sockets and streams too. */
export const handler: Handlers = {
  async DELETE(ctx) {
    await ctx.app.tokens.revoke(ctx.params.name);
    ctx.audit("token.revoke", { detail: { name: ctx.params.name } });
    return json({ ok: true });
  },
};
