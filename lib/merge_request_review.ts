/**
 * Reading a merge request's review comments from GitLab: the notes people wrote, each shown as
 * `lib/merge_request_comments.ts` renders it. Apart from the record's owner because it writes nothing: it
 * is a read of GitLab on a person's behalf, with its own best-effort rule for the diffs.
 */
import type { GitlabMergeRequests } from "./gitlab_merge_requests.ts";
import type { MergeRequestComment } from "./protocol.ts";
import { toComment } from "./merge_request_comments.ts";

/**
 * People's notes and inline ones (with the diff lines around them), oldest first; GitLab's system notes and
 * the connected user's own notes (`me`) left out.
 * @throws {UpstreamError} when GitLab cannot be read.
 */
export async function reviewComments(
  api: Pick<GitlabMergeRequests, "notes" | "diffs">,
  me: string | null,
  repo: string,
  iid: number,
): Promise<MergeRequestComment[]> {
  const notes = (await api.notes(repo, iid)).filter((n) => !n.system && (me === null || n.author !== me));
  let diffs: Awaited<ReturnType<GitlabMergeRequests["diffs"]>> = [];
  if (notes.some((n) => n.position)) {
    // Best effort: without the diff the comments still go, with their path and line.
    diffs = await api.diffs(repo, iid).catch(() => []);
  }
  return notes.map((n) => toComment(n, diffs));
}
