/**
 * Images attached to a prompt (`POST /api/sessions/:id/prompt` `images`): checked here, before anything
 * reaches pi, so a bad one answers 400 (413 for size) and no frame goes to the plugin. pi itself checks
 * nothing on 0.73.1 and replaces undecodable images with text on 1.6.0, so the magic bytes are checked too.
 */
import { InvalidError, TooLargeError } from "./errors.ts";
import type { PromptImage } from "./protocol.ts";
import { IMAGE_TYPES, MAX_IMAGE_BYTES, MAX_IMAGES, MAX_IMAGES_TOTAL_BYTES } from "./image_limits.ts";

// The limits live in lib/image_limits.ts, which the composer reads too.
export { IMAGE_TYPES, MAX_IMAGE_BYTES, MAX_IMAGES, MAX_IMAGES_TOTAL_BYTES };

const MiB = 1024 * 1024;
/**
 * Largest body of the prompt route, and so of the `prompt` frame it becomes: the images' base64
 * (4/3 of their bytes) plus the prompt text escaped in JSON, with room for the envelope. Every other body
 * and frame keeps `MAX_BODY_BYTES` / `MAX_FRAME_BYTES`.
 */
export const MAX_PROMPT_BODY_BYTES = Math.ceil(MAX_IMAGES_TOTAL_BYTES / 3) * 4 + 2 * MiB;

type Magic = (b: Uint8Array) => boolean;
/** The bytes a file of each image type starts with (one entry per type of `IMAGE_TYPES`, type-checked). */
const MAGIC: Record<string, Magic> = {
  "image/png": (b) => starts(b, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  "image/jpeg": (b) => starts(b, [0xff, 0xd8, 0xff]),
  "image/gif": (b) => ascii(b, 0, "GIF87a") || ascii(b, 0, "GIF89a"),
  "image/webp": (b) => ascii(b, 0, "RIFF") && ascii(b, 8, "WEBP"),
} satisfies Record<typeof IMAGE_TYPES[number], Magic>;

/**
 * A prompt body without images keeps the ordinary limit: only images may make it larger.
 * @throws {TooLargeError} when `raw` has no images and its JSON is over `maxBytes`.
 */
export function checkTextOnlySize(raw: unknown, maxBytes: number): void {
  const images = (raw as { images?: unknown } | null)?.images;
  if (Array.isArray(images) && images.length > 0) return;
  const size = new TextEncoder().encode(JSON.stringify(raw) ?? "").length;
  if (size > maxBytes) throw new TooLargeError(`body is larger than ${maxBytes} bytes`);
}

const BASE64_RE = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Check a prompt's images: count, type, base64, magic bytes and sizes.
 * @returns the images, unchanged.
 * @throws {InvalidError} for too many images, an unknown type, bad base64 or bytes of another kind;
 *   {TooLargeError} when one image or all of them together are too large.
 */
export function checkImages(images: readonly PromptImage[]): PromptImage[] {
  if (images.length > MAX_IMAGES) {
    throw new InvalidError(`images: at most ${MAX_IMAGES} images per prompt, got ${images.length}`);
  }
  let total = 0;
  images.forEach((img, i) => {
    const magic = MAGIC[img.mimeType];
    if (!magic) {
      throw new InvalidError(`images.${i}: type must be one of ${IMAGE_TYPES.join(", ")}`);
    }
    const size = decodedSize(img.data);
    if (size === null) throw new InvalidError(`images.${i}: data is not valid base64`);
    if (size > MAX_IMAGE_BYTES) {
      throw new TooLargeError(`images.${i}: larger than ${MAX_IMAGE_BYTES} bytes`);
    }
    total += size;
    if (total > MAX_IMAGES_TOTAL_BYTES) {
      throw new TooLargeError(`images: larger than ${MAX_IMAGES_TOTAL_BYTES} bytes together`);
    }
    // 16 base64 characters are 12 bytes: enough for every signature above.
    if (!magic(bytes(img.data.slice(0, 16)))) {
      throw new InvalidError(`images.${i}: bytes are not a ${img.mimeType} image`);
    }
  });
  return [...images];
}

/** Bytes a padded base64 string decodes to, or null when it is not one. */
function decodedSize(data: string): number | null {
  if (data.length === 0 || data.length % 4 !== 0 || !BASE64_RE.test(data)) return null;
  const pad = data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0;
  return (data.length / 4) * 3 - pad;
}

function starts(b: Uint8Array, sig: number[]): boolean {
  return sig.every((x, i) => b[i] === x);
}

function ascii(b: Uint8Array, at: number, s: string): boolean {
  return [...s].every((c, i) => b[at + i] === c.charCodeAt(0));
}

function bytes(s: string): Uint8Array {
  return Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
}
