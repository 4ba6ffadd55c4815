import { SessionId } from "../../../../lib/protocol.ts";
import { HttpError } from "../../../../lib/http.ts";
import { InvalidError, sessionNotFound } from "../../../../lib/errors.ts";
import { StorageGoneError } from "../../../../lib/spawn/backend.ts";
import type { Handlers } from "../../../../lib/router.ts";

/**
 * A spawned session's work as a git bundle to clone: its branch from its base, with the uncommitted changes
 * as one more commit on top (made in a helper with no network; the session's branch is not touched).
 */
export const handler: Handlers = {
  async GET(ctx) {
    const id = SessionId.safeParse(ctx.params.id);
    if (!id.success) throw new InvalidError("not a valid session id");
    if (!ctx.app.sessions.get(id.data)) throw sessionNotFound(id.data);
    let bundle: Uint8Array;
    try {
      bundle = await ctx.app.spawner.bundle(id.data);
    } catch (error) {
      if (error instanceof StorageGoneError) throw new HttpError(410, error.message);
      throw error;
    }
    ctx.audit("bundle", { sessionId: id.data, detail: { bytes: bundle.length } });
    return new Response(bundle as Uint8Array<ArrayBuffer>, {
      headers: {
        "content-type": "application/octet-stream",
        "content-disposition": `attachment; filename="lvmh-${id.data.slice(0, 8)}.bundle"`,
        "x-content-type-options": "nosniff",
        "cache-control": "no-store",
      },
    });
  },
};
