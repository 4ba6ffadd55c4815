import type { z } from "zod";
import {
  JsonBody,
  MAX_BODY_BYTES,
  parseWith,
  PromptBody,
  type PromptFrame as PromptFrameSchema,
} from "../../../../lib/protocol.ts";
import { InvalidError } from "../../../../lib/errors.ts";
import { HttpError, json, readJson } from "../../../../lib/http.ts";
import {
  checkImages,
  checkTextOnlySize,
  ImageTooLargeError,
  MAX_PROMPT_BODY_BYTES,
} from "../../../../lib/images.ts";
import { imageStore } from "../../../../lib/image_store.ts";
import { actorName } from "../../../../lib/auth.ts";
import type { Handlers } from "../../../../lib/router.ts";
import type { Command } from "../../../../lib/sessions.ts";

type PromptCommand = Extract<Command, { type: "prompt" }>;
type PromptFrame = z.infer<typeof PromptFrameSchema>;

/** Deliver a prompt, with images or without, into a live session (steer by default, or as a follow-up). */
export const handler: Handlers = {
  async POST(ctx) {
    // Only this route takes a body this large, and only for images: a prompt may carry 20 MB of them.
    let body: PromptBody;
    const raw = await readJson(ctx.req, JsonBody, MAX_PROMPT_BODY_BYTES);
    let images;
    try {
      checkTextOnlySize(raw, MAX_BODY_BYTES);
      const parsed = parseWith(PromptBody, raw);
      if (!parsed.ok) throw new InvalidError(parsed.message);
      body = parsed.value;
      images = body.images?.length ? checkImages(body.images) : undefined;
    } catch (err) {
      if (err instanceof ImageTooLargeError) throw new HttpError(413, err.message);
      throw err;
    }
    const promptId = crypto.randomUUID();
    const id = ctx.params.id;
    // Images are kept (committed) before the frame leaves, so the conversation can always show what pi got;
    // only for a live session, so a refused prompt leaves nothing behind. No await until `send`.
    const stored = images && ctx.app.sessions.isOnline(id)
      ? imageStore(ctx.app.store.db).put(id, images)
      : [];
    // `by` is the prompt frame's (lib/protocol.ts); the registry passes every field of a command on.
    const frame: PromptCommand & Pick<PromptFrame, "by"> = {
      type: "prompt",
      promptId,
      commandId: promptId,
      message: body.message,
      deliverAs: body.deliverAs,
      by: actorName(ctx.principal),
      ...(images ? { images } : {}),
    };
    ctx.app.sessions.send(id, frame);
    // The audit keeps what was asked, not the pictures: their types, sizes and names in the image store.
    const pictures = stored.length ? stored : undefined;
    ctx.audit("prompt", {
      sessionId: id,
      detail: {
        promptId,
        message: body.message,
        deliverAs: body.deliverAs,
        ...(pictures ? { images: pictures } : {}),
      },
    });
    return json({ ok: true, promptId, commandId: promptId });
  },
};
