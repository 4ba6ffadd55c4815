import {
  MergeRequestCommentsSendBody,
  type MergeRequestCommentsSendResult,
} from "../../../../../../lib/protocol.ts";
import { json, readJson } from "../../../../../../lib/http.ts";
import { NotFoundError, sessionNotFound, sessionOffline } from "../../../../../../lib/errors.ts";
import { NotConnectedError } from "../../../../../../lib/merge_request_errors.ts";
import { commentsFollowUp } from "../../../../../../lib/merge_request_comments.ts";
import { actorName } from "../../../../../../lib/auth.ts";
import type { Handlers } from "../../../../../../lib/router.ts";

/**
 * The review comments a person picked go to the agent as one follow-up, each fenced with its path, line and
 * diff hunk. 409 while the session is offline (checked before GitLab is asked), 404 without a merge request,
 * 400 for an id that is not one of its comments. Audited as `merge_request.comments`.
 */
export const handler: Handlers = {
  async POST(ctx) {
    const id = ctx.params.id;
    const body = await readJson(ctx.req, MergeRequestCommentsSendBody);
    if (!ctx.app.store.getSession(id)) throw sessionNotFound(id);
    if (!ctx.app.sessions.isOnline(id)) throw sessionOffline(id);
    const mr = ctx.app.mergeRequests.get(id);
    if (!mr) throw new NotFoundError(`Session "${id}" has no merge request`);
    let comments;
    try {
      comments = await ctx.app.mergeRequests.comments(id);
    } catch (error) {
      if (error instanceof NotConnectedError) return json({ error: error.message }, 412);
      throw error;
    }
    const message = commentsFollowUp(mr, comments, [...new Set(body.ids)], body.note || undefined);
    const sent = ctx.app.sessions.prompt(id, {
      message,
      deliverAs: "followUp",
      by: actorName(ctx.principal),
    });
    ctx.audit("merge_request.comments", {
      sessionId: id,
      detail: { iid: mr.iid, ids: body.ids, promptId: sent.promptId },
    });
    const result: MergeRequestCommentsSendResult = { ok: true, promptId: sent.promptId };
    return json(result);
  },
};
