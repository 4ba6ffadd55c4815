/**
 * Which user messages came from the daemon's `prompt` frames, and the images of user messages as the
 * protocol names them (sha256 and size, never the bytes).
 *
 * pi emits a user message when it takes a prompt: at once from idle, after the current tool calls for a steer,
 * at the end of the run for a follow-up, and prompts typed in the terminal queue among them. So a delivered
 * prompt is remembered until a user message with its text shows up, and matched by content (oldest first among
 * equal texts), not by position. pi 0.73.1 keeps the text as sent; 1.6.0 appends notes about the images it
 * resized or dropped after a blank line, and may re-encode them (so their bytes no longer hash to what the
 * daemon stored).
 */
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { FieldMax } from "../../lib/wire.ts";
import { MAX_WEB_PROMPTS } from "./constants.ts";
import type { FrameOf, MessageFrom, MessageImage, PromptSource } from "./frames.ts";

/** An image part of a user message, as the protocol's `MessageImage` (sha256 and size, never the bytes). */
export type ImageRef = MessageImage;

/** A prompt the daemon sent, delivered to pi and not yet seen as a user message. */
export interface WebPrompt {
  promptId?: string;
  by?: string;
  source?: PromptSource;
  text: string;
  images: ImageRef[];
}

/** An image as the protocol names it: the sha256 and size of its base64 `data`. */
export function imageRef(
  data: unknown,
  mimeType: unknown,
  source: ImageRef["source"],
): ImageRef {
  const bytes = Buffer.from(typeof data === "string" ? data : "", "base64");
  return {
    type: "image",
    mimeType: String(mimeType ?? "").slice(0, FieldMax.mimeType),
    sha256: createHash("sha256").update(bytes).digest("hex"),
    bytes: bytes.length,
    source,
  };
}

/** Text of a user message's content: its text parts joined as pi joins them. */
export function userText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.filter((p) => p?.type === "text").map((p) => String(p.text ?? "")).join("\n");
}

/** Delivered prompts waiting for their user message. */
export class Origins {
  #pending: WebPrompt[] = [];

  /** Remember a prompt handed to pi (hashing its images now, once). */
  add(
    p:
      & Pick<FrameOf<"prompt">, "message">
      & Partial<Pick<FrameOf<"prompt">, "promptId" | "by" | "images" | "source">>,
  ): WebPrompt {
    const w: WebPrompt = {
      text: p.message,
      images: (p.images ?? []).map((i) => imageRef(i.data, i.mimeType, "web")),
    };
    if (typeof p.promptId === "string") w.promptId = p.promptId.slice(0, FieldMax.promptId);
    if (typeof p.by === "string") w.by = p.by.slice(0, FieldMax.by);
    if (p.source === "web" || p.source === "cli") w.source = p.source;
    this.#pending.push(w);
    // A prompt pi dropped (an abort that cleared its queue) must not pile up for ever.
    if (this.#pending.length > MAX_WEB_PROMPTS) this.#pending.shift();
    return w;
  }

  /** Forget a prompt pi refused. */
  drop(w: WebPrompt): void {
    const i = this.#pending.indexOf(w);
    if (i >= 0) this.#pending.splice(i, 1);
  }

  /** How many prompts wait for their message. */
  get size(): number {
    return this.#pending.length;
  }

  /** The oldest delivered prompt a user message with this content shows, taken out; null for none. */
  take(content: unknown): WebPrompt | null {
    const text = userText(content);
    const i = this.#pending.findIndex((w) => text === w.text || text.startsWith(w.text + "\n\n"));
    return i < 0 ? null : this.#pending.splice(i, 1)[0];
  }
}

/** The `from` of a matched prompt. */
export function fromOf(w: WebPrompt): MessageFrom {
  const from: MessageFrom = {};
  if (w.promptId !== undefined) from.promptId = w.promptId;
  if (w.by !== undefined) from.by = w.by;
  if (w.source !== undefined) from.source = w.source;
  return from;
}

/**
 * The image parts of a user message. A web prompt's message with all its images has them in order, as sent or
 * re-encoded by pi 1.6.0: they are the prompt's, hashed once already. When pi dropped some, an image whose
 * bytes are a prompt image's is that one; any other is pi's own (from the terminal).
 */
export function messageImages(content: unknown, web: WebPrompt | null): ImageRef[] {
  if (!Array.isArray(content)) return [];
  const parts = content.filter((p) => p?.type === "image");
  if (web && web.images.length === parts.length) return web.images.slice();
  return parts.map((p) => {
    const own = imageRef(p.data, p.mimeType, "terminal");
    return web?.images.find((w) => w.sha256 === own.sha256) ?? own;
  });
}
