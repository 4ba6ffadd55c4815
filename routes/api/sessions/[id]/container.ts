import { SessionId } from "../../../../lib/protocol.ts";
import { json } from "../../../../lib/http.ts";
import { InvalidError } from "../../../../lib/errors.ts";
import type { Handlers } from "../../../../lib/router.ts";

/** Stop and remove a spawned session's container; the session goes offline when its bridge disconnects. */
export const handler: Handlers = {
  async DELETE(ctx) {
    const id = SessionId.safeParse(ctx.params.id);
    if (!id.success) throw new InvalidError("not a valid session id");
    await ctx.app.spawner.stopSession(id.data);
    ctx.audit("stop", { sessionId: id.data });
    return json({ ok: true });
  },
};
