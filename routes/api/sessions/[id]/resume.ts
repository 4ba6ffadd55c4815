import { SessionId } from "../../../../lib/protocol.ts";
import { HttpError, json } from "../../../../lib/http.ts";
import { InvalidError, sessionNotFound } from "../../../../lib/errors.ts";
import { StorageGoneError } from "../../../../lib/spawn/backend.ts";
import type { Handlers } from "../../../../lib/router.ts";

/**
 * Resume a stopped or crashed spawned session: a new worker on its kept storage, where pi reopens its
 * session file. Answers once the worker started (its hello follows); the job is on `/api/spawn/status`.
 */
export const handler: Handlers = {
  async POST(ctx) {
    const id = SessionId.safeParse(ctx.params.id);
    if (!id.success) throw new InvalidError("not a valid session id");
    if (!ctx.app.sessions.get(id.data)) throw sessionNotFound(id.data);
    ctx.audit("resume", { sessionId: id.data });
    try {
      const { jobId, containerId } = await ctx.app.spawner.resume(id.data);
      return json({ jobId, containerId }, 202);
    } catch (error) {
      if (error instanceof StorageGoneError) throw new HttpError(410, error.message);
      throw error;
    }
  },
};
