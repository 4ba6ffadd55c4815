import { json } from "../../../../lib/http.ts";
import type { Handlers } from "../../../../lib/router.ts";

/** Abort the current run of a live session. */
export const handler: Handlers = {
  POST(ctx) {
    ctx.app.live.send(ctx.params.id, { type: "abort" });
    return json({ ok: true });
  },
};
