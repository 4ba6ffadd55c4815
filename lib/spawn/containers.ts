/**
 * The state of each spawned session's worker, kept in SQLite (`session_containers`) so a stopped or crashed
 * session is still known as one after a daemon restart, with the worker's last log lines: a worker is
 * removed once it ended, and its output would otherwise go with it. A session without a row is not a
 * spawned one (a terminal session): its `container` is null.
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import type { ContainerState } from "../protocol.ts";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS session_containers(sessionId TEXT PRIMARY KEY, repo TEXT NOT NULL,
  state TEXT NOT NULL, exitCode INTEGER, reason TEXT, logs TEXT, updatedAt INTEGER NOT NULL);
`;

/** The most log text kept per session (the last lines of it). */
export const MAX_KEPT_LOG_CHARS = 256 * 1024;

/** One session's worker as the daemon last saw it. */
export interface ContainerRecord {
  sessionId: string;
  repo: string;
  state: ContainerState;
  /** How a crashed worker ended; null otherwise. */
  exitCode: number | null;
  /** `"oom"`, `"exit 1"`, …: why a crashed worker ended; null otherwise. */
  reason: string | null;
  /** The worker's last output, kept once it was removed (until the session is resumed or discarded). */
  logs: string | null;
  updatedAt: number;
}

/** What ended a worker, when it was not a stop. */
export interface WorkerEnd {
  exitCode: number;
  reason: string;
}

/** The rows of one database; `onChange` hears of every session whose row changed (the list shows it). */
export class ContainerStates {
  #get: StatementSync;
  #put: StatementSync;
  #delete: StatementSync;
  #all: StatementSync;
  #onChange: (sessionId: string) => void;

  constructor(db: DatabaseSync, onChange: (sessionId: string) => void = () => {}) {
    db.exec(SCHEMA);
    this.#get = db.prepare(
      "SELECT sessionId, repo, state, exitCode, reason, logs, updatedAt FROM session_containers WHERE sessionId = ?",
    );
    this.#put = db.prepare(
      `INSERT INTO session_containers(sessionId, repo, state, exitCode, reason, logs, updatedAt)
       VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT(sessionId) DO UPDATE SET repo = excluded.repo, state = excluded.state,
         exitCode = excluded.exitCode, reason = excluded.reason, logs = excluded.logs,
         updatedAt = excluded.updatedAt`,
    );
    this.#delete = db.prepare("DELETE FROM session_containers WHERE sessionId = ?");
    this.#all = db.prepare(
      "SELECT sessionId, repo, state, exitCode, reason, logs, updatedAt FROM session_containers",
    );
    this.#onChange = onChange;
  }

  /** One session's row, or undefined for a session that was never spawned. */
  get(sessionId: string): ContainerRecord | undefined {
    const row = this.#get.get(sessionId) as ContainerRecord | undefined;
    return row ? { ...row } : undefined;
  }

  /** Every row. */
  list(): ContainerRecord[] {
    return (this.#all.all() as unknown as ContainerRecord[]).map((r) => ({ ...r }));
  }

  /**
   * Move a session's worker to `state`. `starting` forgets the logs and the end of an earlier worker;
   * `stopped` and `crashed` keep the logs given (else the ones kept); only `crashed` has an exit code and
   * a reason.
   */
  set(
    sessionId: string,
    repo: string,
    state: ContainerState,
    o: { end?: WorkerEnd; logs?: string | null } = {},
  ): void {
    const before = this.get(sessionId);
    const ended = state === "stopped" || state === "crashed";
    const logs = state === "starting" ? null : o.logs !== undefined ? keepTail(o.logs) : before?.logs ?? null;
    const end = state === "crashed" ? o.end ?? { exitCode: before?.exitCode ?? -1, reason: "unknown" } : null;
    this.#put.run(
      sessionId,
      repo,
      state,
      end?.exitCode ?? null,
      end?.reason ?? null,
      ended || state === "running" ? logs : null,
      Date.now(),
    );
    this.#onChange(sessionId);
  }

  /** Forget a session's row (discarded, or a first spawn that failed and left nothing). */
  delete(sessionId: string): void {
    this.#delete.run(sessionId);
    this.#onChange(sessionId);
  }
}

/** The end of `text` within `MAX_KEPT_LOG_CHARS`, cut at a line start. */
function keepTail(text: string | null): string | null {
  if (text === null || text.length <= MAX_KEPT_LOG_CHARS) return text;
  const tail = text.slice(-MAX_KEPT_LOG_CHARS);
  const nl = tail.indexOf("\n");
  return nl >= 0 ? tail.slice(nl + 1) : tail;
}

/** The last `n` lines of `text` (a trailing newline does not count as a line). */
export function lastLines(text: string, n: number): string {
  if (n <= 0) return "";
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  return lines.length ? lines.slice(-n).join("\n") + "\n" : "";
}

/** Why a worker ended, in the words `reason` carries: `oom`, or `exit N`. */
export function endReason(exitCode: number, oom: boolean): string {
  return oom ? "oom" : `exit ${exitCode}`;
}
