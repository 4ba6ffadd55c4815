import { acceptBrowserSocket } from "../lib/browser_conn.ts";
import { upgrade } from "../lib/upgrade.ts";
import type { Handlers } from "../lib/router.ts";

/** Browser socket (Transport 3). */
export const handler: Handlers = {
  GET: (ctx) => upgrade(ctx.req, (socket) => acceptBrowserSocket(ctx.app, socket, ctx.principal)),
};
