import { json } from "../../../lib/http.ts";
import type { Handlers } from "../../../lib/router.ts";

/** Whether GitLab is connected, to which instance and as whom; never the token. */
export const handler: Handlers = {
  GET(ctx) {
    return json(ctx.app.gitlab.status());
  },
};
