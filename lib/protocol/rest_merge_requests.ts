/**
 * REST shapes of a session's merge request (Transport 2): opening or updating it, lvmh's record of it, and its
 * review comments, which a person can send to the agent as one follow-up.
 */
import { z } from "zod";
import type { MergeRequestState } from "./shapes.ts";
import { BranchName } from "./rest_gitlab.ts";

/** `POST /api/sessions/:id/merge-request`: push the session's work and open or update its merge request. */
export const MergeRequestBody = z.object({
  title: z.string().trim().min(1, "title is required").max(255),
  description: z.string().max(100_000).optional(),
  targetBranch: BranchName.optional(),
  draft: z.boolean().optional(),
  /** Push even when an added line looks like a secret: admins only. */
  allowSecrets: z.boolean().optional(),
});

/** `GET /api/sessions/:id/merge-request`: lvmh's record of the session's merge request, followed on GitLab. */
export interface MergeRequestView {
  iid: number;
  webUrl: string;
  state: MergeRequestState;
  sourceBranch: string;
  targetBranch: string;
  /** The head lvmh last pushed to the source branch. */
  sha: string;
  title: string;
  /** The latest pipeline of the merge request, as GitLab reported it. */
  pipeline: { id: number; status: string; webUrl: string } | null;
  /** GitLab's `detailed_merge_status` (or `merge_status`), e.g. `mergeable`, `ci_still_running`. */
  mergeStatus: string | null;
  /** How many notes people wrote on it (GitLab's system notes left out). */
  notes: number;
  /** When lvmh's record last changed (ms). */
  updatedAt: number;
}

/** One review comment of a merge request: a person's note, or an inline one on a line of the diff. */
export interface MergeRequestComment {
  /** GitLab's note id. */
  id: number;
  /** The author's username. */
  author: string;
  /** The note as written: untrusted text, never markup. */
  body: string;
  /** GitLab's `created_at` (ISO 8601). */
  createdAt: string;
  /** Inline comments: the file (its new path), the line (new side; the old side for a removed line). */
  path?: string;
  line?: number;
  /** Inline comments: the lines of the file's diff around `line`, when lvmh could read them. */
  diffHunk?: string;
}
/** `GET /api/sessions/:id/merge-request/comments`: the human and inline notes, oldest first. */
export interface MergeRequestComments {
  comments: MergeRequestComment[];
}
/** `POST /api/sessions/:id/merge-request/comments/send`: the picked comments go to the agent as one follow-up. */
export const MergeRequestCommentsSendBody = z.object({
  ids: z.array(z.number().int().positive()).min(1, "pick at least one comment").max(100),
  /** A person's own words, put before the comments. */
  note: z.string().trim().max(10_000).optional(),
});
export type MergeRequestCommentsSendBody = z.infer<typeof MergeRequestCommentsSendBody>;
/** That route's answer: the follow-up's prompt id, which its `command_result` names too. */
export interface MergeRequestCommentsSendResult {
  ok: true;
  promptId: string;
}
