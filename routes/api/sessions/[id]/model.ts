import { ModelBody } from "../../../../lib/protocol.ts";
import { InvalidError } from "../../../../lib/errors.ts";
import { json, readJson } from "../../../../lib/http.ts";
import type { Handlers } from "../../../../lib/router.ts";

/** Switch a live session's model (and thinking level) to one of the models it reported; pi answers later. */
export const handler: Handlers = {
  async PUT(ctx) {
    const body = await readJson(ctx.req, ModelBody);
    const id = ctx.params.id;
    const session = ctx.app.sessions.get(id);
    if (session?.online) {
      // Only what the plugin reported can be switched to: pi would refuse the rest anyway, but later.
      const known = session.models?.some((m) => m.provider === body.provider && m.id === body.model);
      if (!known) {
        throw new InvalidError(`Unknown model "${body.provider}/${body.model}" for session "${id}"`);
      }
    }
    const commandId = crypto.randomUUID();
    // Throws the 404 (unknown) or 409 (offline) itself.
    ctx.app.sessions.send(id, {
      type: "set_model",
      commandId,
      provider: body.provider,
      model: body.model,
      ...(body.thinking ? { thinking: body.thinking } : {}),
    });
    ctx.audit("model", { sessionId: id, detail: { commandId, ...body } });
    return json({ commandId }, 202);
  },
};
