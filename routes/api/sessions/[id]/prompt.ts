import { PromptBody } from "../../../../lib/protocol.ts";
import { json, readJson } from "../../../../lib/http.ts";
import type { Handlers } from "../../../../lib/router.ts";

/** Deliver a prompt into a live session (steer by default, or as a follow-up). */
export const handler: Handlers = {
  async POST(ctx) {
    const body = await readJson(ctx.req, PromptBody);
    const promptId = crypto.randomUUID();
    ctx.app.sessions.send(ctx.params.id, {
      type: "prompt",
      promptId,
      commandId: promptId,
      message: body.message,
      deliverAs: body.deliverAs,
    });
    ctx.audit("prompt", {
      sessionId: ctx.params.id,
      detail: { promptId, message: body.message, deliverAs: body.deliverAs },
    });
    return json({ ok: true, promptId, commandId: promptId });
  },
};
