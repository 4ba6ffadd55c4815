import { JsonBody, MAX_BODY_BYTES, parseWith, PromptBody } from "../../../../lib/protocol.ts";
import { InvalidError } from "../../../../lib/errors.ts";
import { json, readJson } from "../../../../lib/http.ts";
import { checkTextOnlySize, MAX_PROMPT_BODY_BYTES } from "../../../../lib/images.ts";
import { actorName } from "../../../../lib/auth.ts";
import type { Handlers } from "../../../../lib/router.ts";
import { CLI_USER_AGENT } from "../../../../lib/wire.ts";

/** Deliver a prompt, with images or without, into a live session (steer by default, or as a follow-up). */
export const handler: Handlers = {
  async POST(ctx) {
    // Only this route takes a body this large, and only for images: a prompt may carry 20 MB of them.
    const raw = await readJson(ctx.req, JsonBody, MAX_PROMPT_BODY_BYTES);
    checkTextOnlySize(raw, MAX_BODY_BYTES);
    const parsed = parseWith(PromptBody, raw);
    if (!parsed.ok) throw new InvalidError(parsed.message);
    const { message, deliverAs, images } = parsed.value;
    const id = ctx.params.id;
    // A `stop` budget or the daily cap reached: 409 until someone raises it.
    if (ctx.app.store.getSession(id)) ctx.app.budgets.checkPrompt(id);
    // Someone else holds the wheel: 409 unless forced, and a forced prompt is audited as such.
    if (ctx.app.presence.checkSteer(id, actorName(ctx.principal), parsed.value.force)) {
      ctx.audit("wheel.override", { sessionId: id, detail: { action: "prompt" } });
    }
    const worker = ctx.app.spawner.container(id)?.state;
    if (!ctx.app.sessions.isOnline(id) && (worker === "stopped" || worker === "crashed") && !images?.length) {
      // A stopped spawned session is resumed, and the prompt kept (in SQLite, like a hook's) until its new
      // worker is online and idle, then delivered once.
      await ctx.app.spawner.resume(id);
      const by = actorName(ctx.principal);
      const promptId = ctx.app.hooks.kept.queueFollowUp(id, message, by, { resumed: true });
      ctx.audit("prompt", {
        sessionId: id,
        detail: { promptId, message, deliverAs: "followUp", resumed: true },
      });
      return json({ ok: true, promptId, commandId: promptId, resumed: true });
    }
    // With replicas the images are on the shared database before the prompt leaves, so any replica serves them.
    const kept = ctx.app.replica && images?.length
      ? await ctx.app.sessions.keepShared(id, images, ctx.app.images)
      : undefined;
    const sent = ctx.app.sessions.prompt(ctx.params.id, {
      message,
      deliverAs,
      images,
      kept,
      by: actorName(ctx.principal),
      // Only a label for the session's runs (who sent it is `by`, from the token): lvmh's CLI names itself.
      source: ctx.req.headers.get("user-agent")?.startsWith(CLI_USER_AGENT) ? "cli" : "web",
    });
    // The audit keeps what was asked, not the pictures: their types, sizes and names in the image store.
    ctx.audit("prompt", { sessionId: ctx.params.id, detail: sent });
    return json({ ok: true, promptId: sent.promptId, commandId: sent.promptId });
  },
};
