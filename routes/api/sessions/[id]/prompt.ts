import { JsonBody, MAX_BODY_BYTES, parseWith, PromptBody } from "../../../../lib/protocol.ts";
import { InvalidError } from "../../../../lib/errors.ts";
import { HttpError, json, readJson } from "../../../../lib/http.ts";
import {
  checkImages,
  checkTextOnlySize,
  ImageTooLargeError,
  MAX_PROMPT_BODY_BYTES,
} from "../../../../lib/images.ts";
import type { Handlers } from "../../../../lib/router.ts";

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
    ctx.app.sessions.send(ctx.params.id, {
      type: "prompt",
      promptId,
      commandId: promptId,
      message: body.message,
      deliverAs: body.deliverAs,
      ...(images ? { images } : {}),
    });
    // The audit keeps what was asked, not the pictures: their types and base64 lengths.
    const pictures = images?.map((i) => ({ mimeType: i.mimeType, chars: i.data.length }));
    ctx.audit("prompt", {
      sessionId: ctx.params.id,
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
