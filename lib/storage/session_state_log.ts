/**
 * The per-session state that spawning and budgets keep beside the event log, behind one async interface so
 * several replicas on one database share it: each session's own budget (`session_budgets`, lib/budget_table.ts),
 * its working copy's record (`session_workspaces`, lib/workspaces.ts) and its worker's state with the last logs
 * (`session_containers`, lib/spawn/containers.ts). Two implementations pass one contract
 * (tests/process/session_state_contract_test.ts): SQLite over those owners (their tables: the one schema) and
 * PostgreSQL (the same columns). Usage runs are lib/storage/usage_run_log.ts.
 *
 * Which replica acts on a worker: moving a worker's state is a compare-and-set on the state the caller read
 * (`from`). Of two replicas resuming, settling or discarding the same session at once, exactly one sees its
 * move made (`true`) and starts, removes or marks the worker; the other learns that someone else acted and
 * leaves the worker alone. A write without `from` is last-writer-wins, as the single daemon writes today.
 *
 * A raise of a budget is one increment in the database, not a read and a write: two approved cards raise twice,
 * whichever replicas store them. It may join an approval decision's transaction (`raiseBudgetWrites`).
 *
 * The session list's glances (`session_glance`, lib/glance_store.ts) have no interface here on purpose: they
 * are a cache of figures rebuilt from the events (a row behind its session's lastSeq is caught up from the
 * log), and every replica follows every session's events through the event feed, so each replica keeps its
 * own in memory and in its own file; sharing them would add a write per tick per replica for nothing another
 * replica could not compute from the log it already reads.
 */
import type { ContainerState } from "../protocol.ts";
import type { BudgetRow } from "../budget_table.ts";
import type { WorkspaceRecord, WorkspaceStart } from "../workspaces.ts";
import type { ContainerRow, WorkerEnd } from "../spawn/containers.ts";

export type { BudgetRow, ContainerRow, ContainerState, WorkerEnd, WorkspaceRecord, WorkspaceStart };

/** The limits a person (or a default) sets. */
export interface BudgetLimits {
  maxCost: number | null;
  maxTokens: number | null;
  onReach: BudgetRow["onReach"];
}

/** The budget a raise writes first when the session has no row (a default budget in force). */
export interface BudgetFallback extends BudgetLimits {
  source: BudgetRow["source"];
}

/** How a worker's state moves (see `ContainerStates.set` for what is kept of logs and ends). */
export interface ContainerMove {
  /** What ended a crashed worker. */
  end?: WorkerEnd;
  /** The worker's last output (stopped, crashed); without it the kept logs stay. */
  logs?: string | null;
  /** Move only from one of these states (null: no row yet); without it the write always happens. */
  from?: readonly (ContainerState | null)[];
}

/**
 * Budgets, working copies and workers of every session.
 * @typeParam Writes writes that run inside a caller's transaction with that store's own handle (an approval
 *   decision's, see lib/storage/approval_log.ts).
 */
export interface SessionStateLog<Writes = never> {
  readonly kind: "sqlite" | "postgres";

  /** A session's own budget row, or null (a default may still be in force). */
  budget(sessionId: string): Promise<BudgetRow | null>;
  /** The sessions with a row of their own. */
  budgetIds(): Promise<string[]>;
  /** Every session's own budget row (one read: a replica's copy re-reads them all every second). */
  budgets(): Promise<BudgetRow[]>;
  /** Write a session's budget afresh: nothing raised yet. */
  putBudget(sessionId: string, limits: BudgetLimits, source: BudgetRow["source"]): Promise<void>;
  /**
   * Raise the budget by its own size once more (an approved card), writing `fallback` first when the session
   * has no row. @returns false, writing nothing, when it has no row and no fallback was given.
   */
  raiseBudget(sessionId: string, fallback: BudgetFallback | null): Promise<boolean>;
  /** The same raise, to run inside a caller's transaction. */
  raiseBudgetWrites(sessionId: string, fallback: BudgetFallback | null): Writes;
  deleteBudget(sessionId: string): Promise<void>;

  /**
   * Record a session's working copy; the first record stands (a retried spawn step cannot move its base).
   * @throws {Error} when `baseSha` is not a full sha or a field is empty.
   */
  recordWorkspace(sessionId: string, w: WorkspaceStart, now?: number): Promise<void>;
  workspace(sessionId: string): Promise<WorkspaceRecord | null>;
  deleteWorkspace(sessionId: string): Promise<void>;

  /** A session's worker state without its logs, or null for a session never spawned. */
  container(sessionId: string): Promise<ContainerRow | null>;
  /** Every worker state (the session list and the restart's settling read them all). */
  containers(): Promise<ContainerRow[]>;
  /** The logs kept of a session's last worker, or null. */
  containerLogs(sessionId: string): Promise<string | null>;
  /**
   * Move a session's worker to `state` for `repo`.
   * @returns false, changing nothing, when `move.from` is given and the state is not one of them.
   */
  setContainer(
    sessionId: string,
    repo: string,
    state: ContainerState,
    move?: ContainerMove,
  ): Promise<boolean>;
  /**
   * Forget a session's worker row. @returns false, changing nothing, when `from` is given and the state is not
   * one of them (or there is no row).
   */
  deleteContainer(sessionId: string, from?: readonly ContainerState[]): Promise<boolean>;

  /** Release what the log opened; unusable afterwards. */
  close(): Promise<void>;
}
