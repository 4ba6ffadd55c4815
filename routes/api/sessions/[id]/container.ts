import { SessionId } from "../../../../lib/protocol.ts";
import { HttpError, json } from "../../../../lib/http.ts";
import type { Handlers } from "../../../../lib/router.ts";

/** Stop and remove a spawned session's container; the session goes offline when its bridge disconnects. */
export const handler: Handlers = {
  async DELETE(ctx) {
    const id = SessionId.safeParse(ctx.params.id);
    if (!id.success) throw new HttpError(400, "not a valid session id");
    await ctx.app.spawner.stopSession(id.data);
    return json({ ok: true });
  },
};
