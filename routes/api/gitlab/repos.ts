import { json } from "../../../lib/http.ts";
import type { Handlers } from "../../../lib/router.ts";

/** The member projects of the connected GitLab user, most recently active first. */
export const handler: Handlers = {
  async GET(ctx) {
    return json(await ctx.app.gitlab.repos());
  },
};
