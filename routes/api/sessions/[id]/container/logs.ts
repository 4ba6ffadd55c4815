import { ContainerLogsQuery, SessionId } from "../../../../../lib/protocol.ts";
import { InvalidError, sessionNotFound } from "../../../../../lib/errors.ts";
import type { Handlers } from "../../../../../lib/router.ts";

/** A spawned session's worker's last log lines, as text: the running worker's, or those kept when it ended. */
export const handler: Handlers = {
  async GET(ctx) {
    const id = SessionId.safeParse(ctx.params.id);
    if (!id.success) throw new InvalidError("not a valid session id");
    const query = ContainerLogsQuery.safeParse(Object.fromEntries(ctx.url.searchParams));
    if (!query.success) throw new InvalidError("tail must be a whole number from 1 to 1000");
    if (!ctx.app.sessions.get(id.data)) throw sessionNotFound(id.data);
    const text = await ctx.app.spawner.logs(id.data, query.data.tail);
    return new Response(text, {
      headers: {
        "content-type": "text/plain; charset=utf-8",
        "x-content-type-options": "nosniff",
        "cache-control": "no-store",
      },
    });
  },
};
