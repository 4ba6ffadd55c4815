import { TokenBody } from "../../../lib/protocol.ts";
import { json, readJson } from "../../../lib/http.ts";
import type { Handlers } from "../../../lib/router.ts";

/** Named tokens (admin): list them (never a value or hash), or create one (its value is shown only here). */
export const handler: Handlers = {
  GET: async (ctx) => json(await ctx.app.tokens.list()),
  async POST(ctx) {
    const { name, role } = await readJson(ctx.req, TokenBody);
    const created = await ctx.app.tokens.add(name, role);
    ctx.audit("token.add", { detail: { name, role } });
    return json(created, 201);
  },
};
