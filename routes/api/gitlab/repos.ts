import { json } from "../../../lib/http.ts";
import type { Handlers } from "../../../lib/router.ts";

/** The member projects of the connected GitLab user, most recently active first; `?refresh=1` rereads them. */
export const handler: Handlers = {
  async GET(ctx) {
    return json(await ctx.app.gitlab.repos({ refresh: ctx.url.searchParams.get("refresh") === "1" }));
  },
};
