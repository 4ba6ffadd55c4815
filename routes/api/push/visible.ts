import { json, readJson } from "../../../lib/http.ts";
import { PushVisibleBody } from "../../../lib/protocol.ts";
import type { Handlers } from "../../../lib/router.ts";

/** The page of this browser is shown or hidden: while shown, it sees events there and gets no pushes. */
export const handler: Handlers = {
  async POST(ctx) {
    const { endpoint, visible } = await readJson(ctx.req, PushVisibleBody);
    await ctx.app.push.setVisible(endpoint, visible);
    return json({ ok: true });
  },
};
