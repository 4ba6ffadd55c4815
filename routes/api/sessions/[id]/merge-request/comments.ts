import { json } from "../../../../../lib/http.ts";
import { sessionNotFound } from "../../../../../lib/errors.ts";
import { NotConnectedError } from "../../../../../lib/merge_request_errors.ts";
import type { MergeRequestComments } from "../../../../../lib/protocol.ts";
import type { Handlers } from "../../../../../lib/router.ts";

/**
 * The review comments of a session's merge request, read from GitLab now: people's notes and inline comments
 * (path, line, the diff around it), oldest first. 404 without a merge request, 412 GitLab not connected.
 */
export const handler: Handlers = {
  async GET(ctx) {
    const id = ctx.params.id;
    if (!ctx.app.store.getSession(id)) throw sessionNotFound(id);
    try {
      const body: MergeRequestComments = { comments: await ctx.app.mergeRequests.comments(id) };
      return json(body);
    } catch (error) {
      if (error instanceof NotConnectedError) return json({ error: error.message }, 412);
      throw error;
    }
  },
};
