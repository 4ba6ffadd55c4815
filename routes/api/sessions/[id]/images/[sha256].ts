import { InvalidError, NotFoundError, sessionNotFound } from "../../../../../lib/errors.ts";
import { SHA256_RE } from "../../../../../lib/image_store.ts";
import type { Handlers } from "../../../../../lib/router.ts";

/**
 * The bytes of an image a web prompt sent to this session (as its user message names it by sha256). Content
 * never changes for a name, so browsers may keep it for a year; `private` because it needs a token.
 */
export const handler: Handlers = {
  async GET(ctx) {
    const { id, sha256 } = ctx.params;
    if (!SHA256_RE.test(sha256)) {
      throw new InvalidError("image name must be a sha256 (64 lowercase hex digits)");
    }
    if (!ctx.app.store.getSession(id)) throw sessionNotFound(id);
    const image = await ctx.app.images.get(id, sha256);
    if (!image) throw new NotFoundError(`Session "${id}" has no image ${sha256}`);
    return new Response(image.data as Uint8Array<ArrayBuffer>, {
      headers: {
        "content-type": image.mimeType,
        "content-length": String(image.data.byteLength),
        "x-content-type-options": "nosniff",
        "cache-control": "private, max-age=31536000, immutable",
        // Only ever a picture: nothing in it may run or load anything, even when opened on its own.
        "content-security-policy": "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'",
        "content-disposition": "inline",
      },
    });
  },
};
