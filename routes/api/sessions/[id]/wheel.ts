import { WheelBody } from "../../../../lib/protocol.ts";
import { sessionNotFound } from "../../../../lib/errors.ts";
import { json, readJson } from "../../../../lib/http.ts";
import { actorName } from "../../../../lib/auth.ts";
import type { Handlers } from "../../../../lib/router.ts";

/** Take the wheel of a session (other people's prompts and aborts wait while it is held), or release it. */
export const handler: Handlers = {
  async POST(ctx) {
    const { minutes } = await readJson(ctx.req, WheelBody);
    if (!ctx.app.store.getSession(ctx.params.id)) throw sessionNotFound(ctx.params.id);
    const wheel = ctx.app.presence.take(ctx.params.id, actorName(ctx.principal), minutes);
    ctx.audit("wheel", { sessionId: ctx.params.id, detail: { minutes, until: wheel.until } });
    return json(wheel);
  },
  DELETE(ctx) {
    const held = ctx.app.presence.release(ctx.params.id);
    if (held) ctx.audit("wheel.release", { sessionId: ctx.params.id, detail: { holder: held.holder } });
    return json({ ok: true });
  },
};
