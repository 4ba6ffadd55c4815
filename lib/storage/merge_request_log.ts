/**
 * lvmh's record of each session's merge request behind an async interface, so several replicas on one
 * database share it. Two implementations pass one contract (tests/process/settings_images_mr_contract_test.ts):
 * SQLite over lib/merge_request_record.ts (its table and statements: the one schema) and PostgreSQL (the same
 * columns).
 *
 * Two writes are compare-and-set, because two replicas may work on the same session at once (a ship on one,
 * a hook's refresh on the other) and neither may act on what the other just replaced:
 * - `updateIf` moves the last pushed sha, which is the `--force-with-lease` base of the next push, only from
 *   the sha the caller pushed over: of two replicas shipping the same session, one records its push and the
 *   other learns that its lease is stale;
 * - `saveIf` writes what GitLab says with the pipeline marks (announced and prompted once per pipeline) only
 *   over the row the marks were computed from, so a failed pipeline is prompted for once across replicas.
 */
import type { Fields, Row } from "../merge_request_record.ts";

export type { Fields, Row };

/** A push lvmh made to a session's branch. */
export interface Push {
  repo: string;
  sourceBranch: string;
  sha: string;
}

/** The pipeline marks written with a read (see lib/merge_request_change.ts). */
export interface Marks {
  notified: number | null;
  prompted: number | null;
  prompts: number;
}

/** What `saveIf` writes: GitLab's fields, when the record changed and was read, and the marks. */
export interface Save {
  fields: Fields;
  /** Moves only when something a person sees changed. */
  updatedAt: number;
  refreshedAt: number;
  marks: Marks;
}

/**
 * Every session's merge request record.
 * @typeParam Also writes that belong to a save (a kept failed-pipeline follow-up), run inside its
 *   transaction with that store's own handle: a crash keeps both or neither.
 */
export interface MergeRequestLog<Also = never> {
  /** Which database holds it. */
  readonly kind: "sqlite" | "postgres";
  /** A session's record, or null. */
  row(sessionId: string): Promise<Row | null>;
  /** Every record (read once at start for the session list's summaries). */
  all(): Promise<Row[]>;
  /**
   * Record a push over `expectedSha` (null: the record has no pushed sha, or there is no record yet, which
   * is then made for `push`'s repo and branch). One conditional write.
   * @returns false, changing nothing, when the record's pushed sha is not `expectedSha`.
   */
  updateIf(sessionId: string, expectedSha: string | null, push: Push, now: number): Promise<boolean>;
  /**
   * Write `next` and run `also` in one transaction, only when the record's read time and marks are still
   * those of `seen` (the row `next` was computed from).
   * @returns false, writing nothing and not running `also`, when the record changed or is gone.
   */
  saveIf(sessionId: string, seen: Row, next: Save, also?: Also): Promise<boolean>;
  /** Forget a deleted session's record (the merge request on GitLab stays). */
  delete(sessionId: string): Promise<void>;
  /** Open merge requests last read at or before `before`, oldest read first. */
  due(before: number, limit: number): Promise<string[]>;
  /** Count a failed read as a read, so the poller tries the others first. */
  postpone(sessionId: string, now: number): Promise<void>;
  /** The sessions with a merge request from this branch of this project. */
  byBranch(repo: string, branch: string): Promise<string[]>;
  /** Release what the log opened; unusable afterwards. */
  close(): Promise<void>;
}
