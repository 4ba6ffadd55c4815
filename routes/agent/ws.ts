import { acceptAgentSocket } from "../../lib/agent_conn.ts";
import { upgrade } from "../../lib/upgrade.ts";
import type { Handlers } from "../../lib/router.ts";

/** Plugin socket (Transport 1). */
export const handler: Handlers = {
  GET: (ctx) => upgrade(ctx.req, (socket) => acceptAgentSocket(ctx.app, socket, ctx.principal)),
};
