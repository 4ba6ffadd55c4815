/**
 * The answer of `GET /api/sessions/:id/changes` and its limits, shared by the daemon and the plugin (which
 * answers a terminal session's `changes` command with the same shape): this module imports nothing and uses
 * no runtime API, so the plugin bundle can load it as it is.
 */

/** `all`: the working tree (untracked files included) against the base; `uncommitted`: against HEAD. */
export type ChangeScope = "all" | "uncommitted";
export const CHANGE_SCOPES: readonly ChangeScope[] = ["all", "uncommitted"];

export type ChangeStatus = "added" | "modified" | "deleted" | "renamed";

/** One changed file. `diff` is git's unified diff of that file alone (3 lines of context, renames detected). */
export interface ChangedFile {
  path: string;
  /** The path before a rename. */
  oldPath?: string;
  status: ChangeStatus;
  binary: boolean;
  additions: number;
  deletions: number;
  diff?: string;
  /** The diff is cut (over a limit) or left out (past the answer's budget); the counts stay exact. */
  truncated?: boolean;
  /** A binary file or a lockfile: counts only, its diff is on `GET /api/sessions/:id/changes/file`. */
  collapsed?: boolean;
}

/** A commit of `base..HEAD`; `at` is the author date in ms since the epoch. */
export interface ChangeCommit {
  sha: string;
  title: string;
  author: string;
  at: number;
}

export interface Changes {
  scope: ChangeScope;
  /** What the working tree is compared with; null outside a git repository (or before its first commit). */
  base: { branch: string; sha: string } | null;
  head: string | null;
  /** The checked-out branch (null when detached or outside a repository). */
  branch: string | null;
  stats: { files: number; additions: number; deletions: number };
  files: ChangedFile[];
  commits: ChangeCommit[];
  /** The answer reached its size budget: the files past it come with counts only (and `truncated`). */
  truncated?: boolean;
}

/** The limits an answer is built under. */
export interface ChangeLimits {
  /** A file's diff over this many UTF-8 bytes is cut (`truncated`). */
  fileBytes: number;
  /** ...or over this many lines. */
  fileLines: number;
  /** The whole answer as JSON stays under this many UTF-8 bytes. */
  totalBytes: number;
}

/** The REST answer's limits. */
export const CHANGE_LIMITS: ChangeLimits = {
  fileBytes: 1024 * 1024,
  fileLines: 5_000,
  totalBytes: 8 * 1024 * 1024,
};

/**
 * A terminal session's answer travels in one `command_result` frame, which the plugin keeps under about
 * 330,000 characters (lib/wire.ts MAX_FRAME_BYTES is 1 MiB of UTF-8): its budget leaves room for the envelope.
 */
export const PLUGIN_CHANGE_LIMITS: ChangeLimits = {
  fileBytes: 256 * 1024,
  fileLines: 5_000,
  totalBytes: 300_000,
};

/** Commits listed at most; past that the newest are kept and the answer is `truncated`. */
export const MAX_COMMITS = 1_000;
/** Longest commit title and author name kept (the protocol's bounds for a plugin's answer). */
export const MAX_TITLE = 1_000;
export const MAX_AUTHOR = 200;

/** Files whose diff nobody reads in a review: listed with counts only (`collapsed`). */
export const LOCKFILES: ReadonlySet<string> = new Set([
  "package-lock.json",
  "yarn.lock",
  "pnpm-lock.yaml",
  "Cargo.lock",
  "go.sum",
  "poetry.lock",
  "composer.lock",
  "Gemfile.lock",
  "deno.lock",
]);

/** True when the file at `path` is one of the lockfiles. */
export function isLockfile(path: string): boolean {
  return LOCKFILES.has(path.slice(path.lastIndexOf("/") + 1));
}
