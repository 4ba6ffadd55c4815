/**
 * The rows of `usage_runs` (one per run, derived from the event log: lib/usage_runs.ts decides when they are
 * counted and written, lib/usage_count.ts how) behind an async interface, so several replicas on one database
 * share them. Two implementations pass one contract (tests/process/session_state_contract_test.ts): SQLite on the
 * table lib/usage_runs.ts makes (the one schema) and PostgreSQL (the same columns, migration 8).
 *
 * Every row carries `seenSeq`, how far its session's log was counted when it was written. Replicas may count
 * the same session at once (its holder after each commit, another replica catching it up for a report): both
 * derive the same rows from the same log, but the one that read less must not overwrite the other's. So a
 * row is replaced only by one counted at least as far (`seenSeq` not lower): the table only moves forward,
 * whichever replica writes last.
 */
import type { RunRow } from "../usage_count.ts";

export type { RunRow };

/** The usage runs of every session. */
export interface UsageRunLog {
  readonly kind: "sqlite" | "postgres";
  /** Each session's highest `seenSeq` (where counting takes up after a restart). */
  seen(): Promise<Map<string, number>>;
  /** One session's highest `seenSeq`, or null when it has no row. */
  seenOf(sessionId: string): Promise<number | null>;
  /** A session's run not ended yet (its latest open row), or null. */
  openRun(sessionId: string): Promise<RunRow | null>;
  /**
   * Write `rows` in one transaction, each with its session's `seen` seq (0 when absent), keeping a stored row
   * counted further. @returns how many rows were written.
   */
  put(rows: readonly RunRow[], seen: ReadonlyMap<string, number>): Promise<number>;
  /** Every run that started in `[from, to)` (ms), in no particular order. */
  range(from: number, to: number): Promise<RunRow[]>;
  /** Forget a deleted session's runs. */
  deleteSession(sessionId: string): Promise<void>;
  /** Release what the log opened; unusable afterwards. */
  close(): Promise<void>;
}
