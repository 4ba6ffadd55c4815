import { json } from "../../../lib/http.ts";
import type { Handlers } from "../../../lib/router.ts";

/** Every spawn job the daemon knows (in flight, running, failed, stopped), newest first. */
export const handler: Handlers = {
  GET(ctx) {
    return json(ctx.app.spawner.jobs());
  },
};
