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

/** A worker's state without its kept logs: what the session list reads of every session. */
export type ContainerRow = Omit<ContainerRecord, "logs">;

/**
 * The rows of one database; `onChange` hears of every session whose row changed (the list shows it). The
 * states are also held in memory: the session list reads one for every session it lists (3,000 point reads
 * per list cost more than the rest of the list), and the logs, up to 256 KiB a row, are read only when asked.
 */
export class ContainerStates {
  #rows = new Map<string, ContainerRow>();
  #logs: StatementSync;
  #put: StatementSync;
  #delete: StatementSync;
  #onChange: (sessionId: string) => void;

  constructor(db: DatabaseSync, onChange: (sessionId: string) => void = () => {}) {
    db.exec(SCHEMA);
    this.#logs = db.prepare("SELECT logs FROM session_containers WHERE sessionId = ?");
    this.#put = db.prepare(
      `INSERT INTO session_containers(sessionId, repo, state, exitCode, reason, logs, updatedAt)
       VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT(sessionId) DO UPDATE SET repo = excluded.repo, state = excluded.state,
         exitCode = excluded.exitCode, reason = excluded.reason, logs = excluded.logs,
         updatedAt = excluded.updatedAt`,
    );
    this.#delete = db.prepare("DELETE FROM session_containers WHERE sessionId = ?");
    const all = db.prepare(
      "SELECT sessionId, repo, state, exitCode, reason, updatedAt FROM session_containers",
    );
    for (const row of all.all() as unknown as ContainerRow[]) this.#rows.set(row.sessionId, { ...row });
    this.#onChange = onChange;
  }

  /** One session's worker state, or undefined for a session that was never spawned. */
  get(sessionId: string): ContainerRow | undefined {
    const row = this.#rows.get(sessionId);
    return row ? { ...row } : undefined;
  }

  /** The logs kept of a session's last worker, or null. */
  logs(sessionId: string): string | null {
    const row = this.#logs.get(sessionId) as { logs: string | null } | undefined;
    return row?.logs ?? null;
  }

  /** Every row. */
  list(): ContainerRow[] {
    return [...this.#rows.values()].map((r) => ({ ...r }));
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
    const logs = state === "starting"
      ? null
      : o.logs !== undefined
      ? keepTail(o.logs)
      : before
      ? this.logs(sessionId)
      : null;
    const end = state === "crashed" ? o.end ?? { exitCode: before?.exitCode ?? -1, reason: "unknown" } : null;
    const row: ContainerRow = {
      sessionId,
      repo,
      state,
      exitCode: end?.exitCode ?? null,
      reason: end?.reason ?? null,
      updatedAt: Date.now(),
    };
    this.#put.run(
      sessionId,
      repo,
      state,
      row.exitCode,
      row.reason,
      ended || state === "running" ? logs : null,
      row.updatedAt,
    );
    this.#rows.set(sessionId, row);
    this.#onChange(sessionId);
  }

  /** Forget a session's row (discarded, or a first spawn that failed and left nothing). */
  delete(sessionId: string): void {
    this.#delete.run(sessionId);
    this.#rows.delete(sessionId);
    this.#onChange(sessionId);
  }
}

/** The end of `text` within `MAX_KEPT_LOG_CHARS`, cut at a line start. */
export function keepTail(text: string | null): string | null {
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
