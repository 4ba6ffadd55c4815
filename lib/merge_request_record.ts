/**
 * lvmh's record of each session's merge request: the `session_merge_requests` table (one row per session),
 * its statements, and how a row reads as the protocol's `MergeRequestView`. It is apart from
 * `lib/merge_requests.ts` so that the owner's logic (ship, follow, tell the listeners) reads as steps on the
 * record instead of SQL, and so the table's layout, upgrades included, is in one place.
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import type { MergeRequestView, SessionMergeRequest } from "./protocol.ts";
import type { GitlabMergeRequest } from "./gitlab_merge_requests.ts";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS session_merge_requests(sessionId TEXT PRIMARY KEY, repo TEXT NOT NULL,
  sourceBranch TEXT NOT NULL, pushedSha TEXT, iid INTEGER, webUrl TEXT, state TEXT, targetBranch TEXT,
  title TEXT, pipeline TEXT, mergeStatus TEXT, notes INTEGER NOT NULL DEFAULT 0, updatedAt INTEGER NOT NULL,
  refreshedAt INTEGER NOT NULL DEFAULT 0);
`;

/** Columns added after the table's first version, with their definitions (added to older files at open). */
const ADDED_COLUMNS: Record<string, string> = {
  // The last pipeline id announced (merge_request.pipeline), and the last one the session was prompted for.
  pipelineNotified: "INTEGER",
  pipelinePrompted: "INTEGER",
  // How many failed-pipeline follow-ups the session had for this merge request (at most `MAX_PIPELINE_PROMPTS`).
  pipelinePrompts: "INTEGER NOT NULL DEFAULT 0",
};

/** One row of `session_merge_requests`. */
export interface Row {
  sessionId: string;
  pipelineNotified: number | null;
  pipelinePrompted: number | null;
  pipelinePrompts: number;
  repo: string;
  sourceBranch: string;
  pushedSha: string | null;
  iid: number | null;
  webUrl: string | null;
  state: string | null;
  targetBranch: string | null;
  title: string | null;
  pipeline: string | null;
  mergeStatus: string | null;
  notes: number;
  updatedAt: number;
  refreshedAt: number;
}

/** What GitLab says of a merge request, as the record keeps it. */
export type Fields = Pick<
  MergeRequestView,
  "iid" | "webUrl" | "state" | "targetBranch" | "title" | "pipeline" | "mergeStatus" | "notes"
>;

/** The table's statements; the owner (`MergeRequests`) decides when each runs. */
export class MergeRequestTable {
  #get: StatementSync;
  #upsertPush: StatementSync;
  #saveMr: StatementSync;
  #delete: StatementSync;
  #marks: StatementSync;
  #due: StatementSync;
  #byBranch: StatementSync;
  #postpone: StatementSync;
  #all: StatementSync;

  /** Create the table, or add the columns an older file lacks. */
  constructor(db: DatabaseSync) {
    db.exec(SCHEMA);
    const have = new Set(
      (db.prepare("PRAGMA table_info(session_merge_requests)").all() as { name: string }[]).map((c) =>
        c.name
      ),
    );
    for (const [name, type] of Object.entries(ADDED_COLUMNS)) {
      if (!have.has(name)) db.exec(`ALTER TABLE session_merge_requests ADD COLUMN ${name} ${type}`);
    }
    this.#get = db.prepare("SELECT * FROM session_merge_requests WHERE sessionId = ?");
    this.#upsertPush = db.prepare(
      `INSERT INTO session_merge_requests(sessionId, repo, sourceBranch, pushedSha, updatedAt) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT(sessionId) DO UPDATE SET pushedSha = excluded.pushedSha, updatedAt = excluded.updatedAt`,
    );
    this.#saveMr = db.prepare(
      `UPDATE session_merge_requests SET iid = ?, webUrl = ?, state = ?, targetBranch = ?, title = ?, pipeline = ?,
       mergeStatus = ?, notes = ?, updatedAt = ?, refreshedAt = ? WHERE sessionId = ?`,
    );
    this.#delete = db.prepare("DELETE FROM session_merge_requests WHERE sessionId = ?");
    this.#marks = db.prepare(
      `UPDATE session_merge_requests SET pipelineNotified = ?, pipelinePrompted = ?, pipelinePrompts = ?
       WHERE sessionId = ?`,
    );
    this.#due = db.prepare(
      `SELECT sessionId FROM session_merge_requests WHERE iid IS NOT NULL AND state = 'opened' AND refreshedAt <= ?
       ORDER BY refreshedAt LIMIT ?`,
    );
    this.#postpone = db.prepare("UPDATE session_merge_requests SET refreshedAt = ? WHERE sessionId = ?");
    this.#byBranch = db.prepare(
      "SELECT sessionId FROM session_merge_requests WHERE repo = ? AND sourceBranch = ? AND iid IS NOT NULL",
    );
    this.#all = db.prepare("SELECT * FROM session_merge_requests");
  }

  row(sessionId: string): Row | undefined {
    return this.#get.get(sessionId) as Row | undefined;
  }

  /** Every row (read once at start for the session list's summaries). */
  all(): Row[] {
    return this.#all.all() as unknown as Row[];
  }

  /** lvmh pushed `sha` to the session's branch: the lease of its next push. */
  pushed(sessionId: string, repo: string, sourceBranch: string, sha: string, now: number): void {
    this.#upsertPush.run(sessionId, repo, sourceBranch, sha, now);
  }

  /** Write what GitLab says; `updatedAt` moves only when something changed, `refreshedAt` on every read. */
  save(sessionId: string, mr: Fields, updatedAt: number, refreshedAt: number): void {
    this.#saveMr.run(
      mr.iid,
      mr.webUrl,
      mr.state,
      mr.targetBranch,
      mr.title,
      mr.pipeline ? JSON.stringify(mr.pipeline) : null,
      mr.mergeStatus,
      mr.notes,
      updatedAt,
      refreshedAt,
      sessionId,
    );
  }

  /** The pipeline marks: the last pipeline announced and prompted for, and how many prompts so far. */
  marks(sessionId: string, notified: number | null, prompted: number | null, prompts: number): void {
    this.#marks.run(notified, prompted, prompts, sessionId);
  }

  delete(sessionId: string): void {
    this.#delete.run(sessionId);
  }

  /** Open merge requests last read at or before `before`, oldest read first. */
  due(before: number, limit: number): string[] {
    return (this.#due.all(before, limit) as { sessionId: string }[]).map((r) => r.sessionId);
  }

  /** Count a failed read as a read, so the poller tries the others first. */
  postpone(sessionId: string, now: number): void {
    this.#postpone.run(now, sessionId);
  }

  /** The sessions with a merge request from this branch of this project. */
  byBranch(repo: string, branch: string): string[] {
    return (this.#byBranch.all(repo, branch) as { sessionId: string }[]).map((r) => r.sessionId);
  }
}

/** The record as the protocol shows it; null before it has a merge request. */
export function toView(row: Row): MergeRequestView | null {
  if (row.iid === null) return null;
  return {
    iid: row.iid,
    webUrl: row.webUrl ?? "",
    state: row.state === "merged" || row.state === "closed" ? row.state : "opened",
    sourceBranch: row.sourceBranch,
    targetBranch: row.targetBranch ?? "",
    sha: row.pushedSha ?? "",
    title: row.title ?? "",
    pipeline: row.pipeline ? JSON.parse(row.pipeline) : null,
    mergeStatus: row.mergeStatus,
    notes: row.notes,
    updatedAt: row.updatedAt,
  };
}

/** What the record keeps of GitLab's answer. */
export function fieldsOf(mr: GitlabMergeRequest): Fields {
  return {
    iid: mr.iid,
    webUrl: mr.webUrl,
    state: mr.state,
    targetBranch: mr.targetBranch,
    title: mr.title,
    pipeline: mr.pipeline,
    mergeStatus: mr.mergeStatus,
    notes: mr.notes,
  };
}

/** The GitLab fields of a row that has a merge request. */
export function fromRow(row: Row): Fields {
  const view = toView(row)!;
  return {
    iid: view.iid,
    webUrl: view.webUrl,
    state: view.state,
    targetBranch: view.targetBranch,
    title: view.title,
    pipeline: view.pipeline,
    mergeStatus: view.mergeStatus,
    notes: view.notes,
  };
}

/** What the session list shows of a merge request. */
export function summaryOf(view: MergeRequestView): SessionMergeRequest {
  return { iid: view.iid, state: view.state, pipeline: view.pipeline?.status ?? null };
}
