import { json } from "../../lib/http.ts";
import type { Handlers } from "../../lib/router.ts";

/**
 * Whether this daemon serves, for load balancers and probes, which carry no token: so it is public and says
 * nothing a caller could use against the deployment (no session, no name, no setting). `holderOf` is how
 * many sessions have their plugin socket on this replica.
 */
export const handler: Handlers = {
  GET: ({ app }) =>
    json(
      {
        ok: true,
        replica: app.config.replicaId,
        database: app.replica ? "postgres" : "sqlite",
        holderOf: app.sessions.onlineCount,
      },
      200,
      { "cache-control": "no-store" },
    ),
};
