import { NameBody } from "../../../../lib/protocol.ts";
import { json, readJson } from "../../../../lib/http.ts";
import type { Handlers } from "../../../../lib/router.ts";

/** Rename a live session through pi's session name (so the terminal shows it too); pi answers later. */
export const handler: Handlers = {
  async PUT(ctx) {
    const { name } = await readJson(ctx.req, NameBody);
    const commandId = crypto.randomUUID();
    ctx.app.sessions.send(ctx.params.id, { type: "set_name", commandId, name });
    ctx.audit("rename", { sessionId: ctx.params.id, detail: { commandId, name } });
    return json({ commandId }, 202);
  },
};
