/**
 * How a session's merge request reads on the page and in the list: the `!12 · pipeline failed` badge, GitLab's
 * pipeline and merge statuses in words, what a failed ship call means to a person (nothing to push, GitLab
 * not connected, secrets found at `file:line`, GitLab's own refusal), and where an inline comment sits.
 * Pure functions; `components/MergeRequestPanel.tsx` and `components/SessionRow.tsx` render them.
 */
import type { MergeRequestComment, SessionMergeRequest } from "../lib/protocol.ts";
import { ApiError } from "./api.ts";
import { type DiffLine, diffLines } from "./diff_view.ts";

/** How a badge is coloured: a failure, a success, work in progress, or nothing to act on. */
export type Tone = "bad" | "good" | "busy" | "quiet";

const PIPELINE_WORDS: Record<string, string> = {
  success: "passed",
  failed: "failed",
  canceled: "canceled",
  skipped: "skipped",
  running: "running",
  pending: "pending",
  created: "created",
  manual: "waiting for a manual job",
  scheduled: "scheduled",
  preparing: "preparing",
  waiting_for_resource: "waiting for a runner",
};

/** GitLab's pipeline status in words (`success` → `passed`); an unknown status as GitLab wrote it. */
export function pipelineWords(status: string): string {
  return PIPELINE_WORDS[status] ?? status.replaceAll("_", " ");
}

/** The tone of a pipeline status. */
export function pipelineTone(status: string | null): Tone {
  if (status === null) return "quiet";
  if (status === "failed") return "bad";
  if (status === "success") return "good";
  if (status === "canceled" || status === "skipped") return "quiet";
  return "busy";
}

/**
 * The list's badge: `!12 · pipeline failed` while open with a pipeline, `!12 · merged` / `!12 · closed`
 * once GitLab says so, `!12` for an open one with no pipeline yet.
 */
export function mergeRequestBadge(mr: SessionMergeRequest): { text: string; tone: Tone } {
  const ref = `!${mr.iid}`;
  if (mr.state === "merged") return { text: `${ref} · merged`, tone: "good" };
  if (mr.state === "closed") return { text: `${ref} · closed`, tone: "quiet" };
  if (mr.pipeline === null) return { text: ref, tone: "quiet" };
  return { text: `${ref} · pipeline ${pipelineWords(mr.pipeline)}`, tone: pipelineTone(mr.pipeline) };
}

const MERGE_STATUS_WORDS: Record<string, string> = {
  mergeable: "ready to merge",
  can_be_merged: "ready to merge",
  cannot_be_merged: "cannot be merged (conflicts)",
  conflict: "has conflicts",
  broken_status: "cannot be merged (conflicts)",
  need_rebase: "needs a rebase",
  ci_must_pass: "waiting for the pipeline to pass",
  ci_still_running: "pipeline still running",
  not_approved: "needs approval",
  discussions_not_resolved: "has unresolved threads",
  draft_status: "draft",
  not_open: "not open",
  blocked_status: "blocked by another merge request",
  checking: "GitLab is checking",
  unchecked: "not checked yet",
  requested_changes: "changes requested",
  jira_association_missing: "needs a Jira issue",
};

/** GitLab's merge status (`detailed_merge_status`) in words; null when GitLab gave none. */
export function mergeStatusWords(status: string | null): string | null {
  if (!status) return null;
  return MERGE_STATUS_WORDS[status] ?? status.replaceAll("_", " ");
}

/** One place a secret was found, as the 422 answer's `secrets` lists it. */
export interface SecretPlace {
  file: string;
  line: number;
  kind: string;
}

/** Why a ship call failed, in terms the panel shows (a link to connect GitLab, each secret's place, …). */
export type ShipFailure =
  | { kind: "nothing"; message: string }
  | { kind: "not-connected"; message: string }
  | { kind: "secrets"; message: string; secrets: SecretPlace[] }
  | { kind: "gitlab"; message: string }
  | { kind: "other"; message: string };

function secretsOf(body: unknown): SecretPlace[] {
  const list = (body as { secrets?: unknown } | null)?.secrets;
  if (!Array.isArray(list)) return [];
  return list.flatMap((s) => {
    const o = s as Partial<SecretPlace> | null;
    return o && typeof o.file === "string" && typeof o.line === "number"
      ? [{ file: o.file, line: o.line, kind: typeof o.kind === "string" ? o.kind : "secret" }]
      : [];
  });
}

/**
 * What a failed `POST /api/sessions/:id/merge-request` means: 409 nothing to push (or not a spawned
 * session: the daemon's words say which), 412 GitLab not connected, 422 secrets (each `file:line`), 502
 * GitLab's or git's own message; anything else as its message.
 */
export function shipFailure(e: unknown): ShipFailure {
  const message = e instanceof Error ? e.message : String(e);
  if (!(e instanceof ApiError)) return { kind: "other", message };
  switch (e.status) {
    case 409:
      return { kind: "nothing", message };
    case 412:
      return { kind: "not-connected", message };
    case 422:
      return { kind: "secrets", message, secrets: secretsOf(e.body) };
    case 502:
      return { kind: "gitlab", message };
    default:
      return { kind: "other", message };
  }
}

/** Where an inline comment sits (`src/a.ts:12`), or null for a note on the whole merge request. */
export function commentPlace(c: Pick<MergeRequestComment, "path" | "line">): string | null {
  if (!c.path) return null;
  return c.line ? `${c.path}:${c.line}` : c.path;
}

/** The title a new merge request starts with: the session's own title, within GitLab's 255 characters. */
export function defaultMergeRequestTitle(sessionTitle: string): string {
  const line = sessionTitle.split("\n").map((l) => l.trim()).find(Boolean) ?? "";
  return line.slice(0, 255);
}

/** The body of the ship call from the form: empty optional fields left out, the title trimmed. */
export function shipBody(
  form: { title: string; description: string; targetBranch: string; draft: boolean },
): {
  title: string;
  description?: string;
  targetBranch?: string;
  draft?: boolean;
} {
  const body: { title: string; description?: string; targetBranch?: string; draft?: boolean } = {
    title: form.title.trim(),
  };
  if (form.description.trim()) body.description = form.description;
  if (form.targetBranch.trim()) body.targetBranch = form.targetBranch.trim();
  if (form.draft) body.draft = true;
  return body;
}

/**
 * The lines of an inline comment's diff hunk: git's own numbering when it starts with its `@@` header, else
 * each line by its first character (GitLab sends some hunks without the header).
 */
export function hunkLines(hunk: string): DiffLine[] {
  if (hunk.startsWith("@@")) return diffLines(hunk);
  const lines = hunk.split("\n");
  if (lines.at(-1) === "") lines.pop();
  return lines.map((line): DiffLine =>
    line.startsWith("+")
      ? { kind: "add", text: line.slice(1) }
      : line.startsWith("-")
      ? { kind: "del", text: line.slice(1) }
      : { kind: "ctx", text: line.startsWith(" ") ? line.slice(1) : line }
  );
}
