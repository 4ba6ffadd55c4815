/**
 * Where each spawned session works: its own working copy (the Docker volume `lvmh-work-<id>`) on its own
 * branch, made at spawn time from the head of a branch of the repository cache. The daemon records that
 * moment here (`session_workspaces`): the repository, the branch the copy started from, its sha, and the
 * session's branch. The agent can rewrite every ref in its copy; it cannot move this record, so "what
 * changed" is always computed against `baseSha`. Rows are written once and deleted with their session.
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS session_workspaces(sessionId TEXT PRIMARY KEY, repo TEXT NOT NULL,
  baseBranch TEXT NOT NULL, baseSha TEXT NOT NULL, branch TEXT NOT NULL, createdAt INTEGER NOT NULL);
`;

/** What a spawn records about a session's working copy. */
export interface WorkspaceStart {
  /** The GitLab project path (`group/project`). */
  repo: string;
  /** The branch the working copy was made from (the requested one, or the project's default branch). */
  baseBranch: string;
  /** That branch's head when the copy was made: 40 hex digits. */
  baseSha: string;
  /** The session's own branch (`workspaceBranch(sessionId)`). */
  branch: string;
}

/** A recorded working copy. */
export interface WorkspaceRecord extends WorkspaceStart {
  sessionId: string;
  createdAt: number;
}

/** A full sha-1 object name as git prints it. */
export const SHA_RE = /^[0-9a-f]{40}$/;

/** The session's own branch: `lvmh/` and the first 8 hex digits of its id, dashes removed. */
export function workspaceBranch(sessionId: string): string {
  return `lvmh/${sessionId.replaceAll("-", "").slice(0, 8).toLowerCase()}`;
}

/** The Docker volume holding a spawned session's working copy. */
export function workVolumeName(sessionId: string): string {
  return `lvmh-work-${sessionId}`;
}

/**
 * The working-copy records as their readers use them: `Workspaces` below (the daemon's SQLite file, answers
 * at once) or `SharedWorkspaces` (lib/workspaces_shared.ts, PostgreSQL shared by replicas, answers with a
 * promise). Every reader awaits what it gets, so one reader serves both.
 */
export interface WorkspaceBook {
  /** Record a session's working copy; the first record stands. */
  record(sessionId: string, w: WorkspaceStart, now?: number): void | Promise<void>;
  /** A session's working copy, or undefined. */
  get(sessionId: string): WorkspaceRecord | undefined | Promise<WorkspaceRecord | undefined>;
  /** Forget a deleted session's record. */
  sessionDeleted(sessionId: string): void | Promise<void>;
}

/** The working-copy records of one database: `createDaemon` builds the one instance (`app.workspaces`). */
export class Workspaces implements WorkspaceBook {
  #insert: StatementSync;
  #get: StatementSync;
  #delete: StatementSync;

  constructor(db: DatabaseSync) {
    db.exec(SCHEMA);
    // OR IGNORE: the first record stands; a retried or repeated spawn step cannot move a session's base.
    this.#insert = db.prepare(
      `INSERT OR IGNORE INTO session_workspaces(sessionId, repo, baseBranch, baseSha, branch, createdAt)
       VALUES (?, ?, ?, ?, ?, ?)`,
    );
    this.#get = db.prepare(
      `SELECT sessionId, repo, baseBranch, baseSha, branch, createdAt FROM session_workspaces
       WHERE sessionId = ?`,
    );
    this.#delete = db.prepare("DELETE FROM session_workspaces WHERE sessionId = ?");
  }

  /**
   * Record a session's working copy; a second call for the same session keeps the first record.
   * @throws {Error} when `baseSha` is not a full sha or a field is empty (a spawn bug, not user input).
   */
  record(sessionId: string, w: WorkspaceStart, now = Date.now()): void {
    if (!SHA_RE.test(w.baseSha)) {
      throw new Error(`workspace ${sessionId}: base sha ${w.baseSha} is not a sha`);
    }
    if (!w.repo || !w.baseBranch || !w.branch) throw new Error(`workspace ${sessionId}: empty field`);
    this.#insert.run(sessionId, w.repo, w.baseBranch, w.baseSha, w.branch, now);
  }

  /** A session's working copy, or undefined for a session that was not spawned (or predates records). */
  get(sessionId: string): WorkspaceRecord | undefined {
    const row = this.#get.get(sessionId) as WorkspaceRecord | undefined;
    return row ? { ...row } : undefined;
  }

  /** Forget a deleted session's record. */
  sessionDeleted(sessionId: string): void {
    this.#delete.run(sessionId);
  }
}
