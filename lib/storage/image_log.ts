/**
 * The images of web prompts behind an async interface, so every replica serves an image whichever one took
 * the prompt. Two implementations pass one contract (tests/process/settings_images_mr_contract_test.ts): SQLite over
 * lib/image_store.ts (its tables and statements, so SQLite keeps one schema) and PostgreSQL (the same two
 * tables, bytes as `bytea`). The semantics are the image store's: each image once, by the sha256 of its
 * bytes; served only for a session it was sent to; a deleted session's links go, and with them every image
 * no other session still holds; each change is one transaction.
 */
import { Buffer } from "node:buffer";
import type { PromptImage } from "../protocol.ts";
import { sha256Hex, type StoredImage, type StoredImageRef } from "../image_store.ts";

export { SHA256_RE, sha256Hex } from "../image_store.ts";
export type { PromptImage, StoredImage, StoredImageRef };

/** The prompt images of a deployment. */
export interface ImageLog {
  /** Which database holds them. */
  readonly kind: "sqlite" | "postgres";
  /**
   * Keep a prompt's images for a session, already checked by `checkImages`; one transaction.
   * @returns each image's sha256, type and decoded size, in order.
   */
  put(sessionId: string, images: readonly PromptImage[], now?: number): Promise<StoredImageRef[]>;
  /** An image sent to `sessionId`, or null (unknown image, or one of another session only). */
  get(sessionId: string, sha256: string): Promise<StoredImage | null>;
  /** Forget a deleted session's images: its links, and each image no other session holds. */
  sessionDeleted(sessionId: string): Promise<void>;
  /** Release what the log opened; unusable afterwards. */
  close(): Promise<void>;
}

/** A prompt image decoded, with its name. */
export interface DecodedImage {
  sha256: string;
  mimeType: string;
  data: Uint8Array;
}

/** Decode a prompt's images (base64) and name each by its sha256, in order. */
export function decodeImages(images: readonly PromptImage[]): DecodedImage[] {
  return images.map((i) => {
    const data = Buffer.from(i.data, "base64");
    return { sha256: sha256Hex(data), mimeType: i.mimeType, data: new Uint8Array(data) };
  });
}

/** What `put` answers for decoded images. */
export function refsOf(decoded: readonly DecodedImage[]): StoredImageRef[] {
  return decoded.map((d) => ({ sha256: d.sha256, mimeType: d.mimeType, bytes: d.data.length }));
}
