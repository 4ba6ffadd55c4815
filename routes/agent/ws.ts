import { acceptAgentSocket } from "../../lib/agent_conn.ts";
import { upgrade } from "../../lib/upgrade.ts";
import { promisesHeartbeat } from "../../lib/liveness.ts";
import { HELPER_ID_PREFIX } from "../../lib/auth.ts";
import { ForbiddenError } from "../../lib/errors.ts";
import type { Handlers } from "../../lib/router.ts";

/** Plugin socket (Transport 1). */
export const handler: Handlers = {
  GET(ctx) {
    // A Kubernetes helper Pod's one-off token fetches that helper's inputs, and speaks for no session.
    if (ctx.principal?.via === "agent" && ctx.principal.sessionId.startsWith(HELPER_ID_PREFIX)) {
      throw new ForbiddenError("A helper's token opens no agent socket");
    }
    // A plugin that promises its heartbeat is checked by its frames, not pinged (lib/liveness.ts).
    const beats = promisesHeartbeat(ctx.req.headers);
    return upgrade(
      ctx.req,
      (socket) => acceptAgentSocket(ctx.app, socket, ctx.principal, beats ? ctx.app.liveness : null),
      { pings: !beats },
    );
  },
};
