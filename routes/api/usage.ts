import { json } from "../../lib/http.ts";
import { InvalidError } from "../../lib/errors.ts";
import { groupRuns, parseUsageQuery } from "../../lib/usage.ts";
import type { Handlers } from "../../lib/router.ts";

/** Runs, tokens and cost from the log, grouped by day, session, repo, person or model (viewer). */
export const handler: Handlers = {
  GET(ctx) {
    let q;
    try {
      q = parseUsageQuery(ctx.url.searchParams);
    } catch (error) {
      throw new InvalidError((error as Error).message);
    }
    const runs = ctx.app.usage.runs(ctx.app.store.listSessions(), q.from, q.to);
    return json(groupRuns(runs, q.by));
  },
};
