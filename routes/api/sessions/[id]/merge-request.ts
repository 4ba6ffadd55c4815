import { MergeRequestBody } from "../../../../lib/protocol.ts";
import { json, readJson } from "../../../../lib/http.ts";
import { ForbiddenError, NotFoundError, sessionNotFound } from "../../../../lib/errors.ts";
import { NotConnectedError } from "../../../../lib/merge_request_errors.ts";
import { SecretsFoundError } from "../../../../lib/ship_work.ts";
import type { Handlers } from "../../../../lib/router.ts";

/**
 * A spawned session's merge request: `POST` pushes its work to its own branch and opens the merge request
 * (201), or pushes new work and updates it (200); `GET` answers lvmh's record, refreshed from GitLab.
 */
export const handler: Handlers = {
  async GET(ctx) {
    const id = ctx.params.id;
    if (!ctx.app.store.getSession(id)) throw sessionNotFound(id);
    const mr = await ctx.app.mergeRequests.view(id);
    if (!mr) throw new NotFoundError(`Session "${id}" has no merge request`);
    return json(mr);
  },

  async POST(ctx) {
    const id = ctx.params.id;
    const body = await readJson(ctx.req, MergeRequestBody);
    if (!ctx.app.store.getSession(id)) throw sessionNotFound(id);
    if (body.allowSecrets && ctx.principal?.role !== "admin") {
      throw new ForbiddenError("Only an admin may push lines that look like secrets (allowSecrets)");
    }
    try {
      const { created, mergeRequest } = await ctx.app.mergeRequests.ship(id, body);
      ctx.audit(created ? "merge_request.create" : "merge_request.update", {
        sessionId: id,
        detail: {
          iid: mergeRequest.iid,
          sha: mergeRequest.sha,
          ...(body.allowSecrets ? { allowSecrets: true } : {}),
        },
      });
      return json({ mergeRequest }, created ? 201 : 200);
    } catch (error) {
      if (error instanceof NotConnectedError) return json({ error: error.message }, 412);
      if (error instanceof SecretsFoundError) {
        return json({ error: error.message, secrets: error.findings }, 422);
      }
      throw error;
    }
  },
};
