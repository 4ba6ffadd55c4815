import { json } from "../../../lib/http.ts";
import type { Handlers } from "../../../lib/router.ts";

/** Every session, most recent activity first. */
export const handler: Handlers = {
  GET: (ctx) => json(ctx.app.sessions.list()),
};
