import { parseWith, RunsQuery } from "../../../../lib/protocol.ts";
import { InvalidError, sessionNotFound } from "../../../../lib/errors.ts";
import { json } from "../../../../lib/http.ts";
import { sessionRuns } from "../../../../lib/search/runs.ts";
import type { Handlers } from "../../../../lib/router.ts";

/** Rows read per page while deriving runs. */
const PAGE = 2000;

/** A session's history as runs, newest first (viewer). */
export const handler: Handlers = {
  GET(ctx) {
    const query = parseWith(RunsQuery, Object.fromEntries(ctx.url.searchParams));
    if (!query.ok) throw new InvalidError(query.message);
    const id = ctx.params.id;
    if (!ctx.app.store.getSession(id)) throw sessionNotFound(id);
    const pages = (after: number) => ctx.app.store.eventRows(id, { after, limit: PAGE });
    return json(sessionRuns(pages, query.value));
  },
};
