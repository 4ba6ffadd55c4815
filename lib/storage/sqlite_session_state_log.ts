/**
 * Budgets, working copies and workers in the daemon's SQLite file, over the daemon's own owners of those tables
 * (lib/budget_table.ts, lib/workspaces.ts, lib/spawn/containers.ts: the one schema). Pass the daemon's
 * instances: the budget ids and worker states are cached in them, and two instances on one file would each
 * miss the other's writes. node:sqlite is synchronous and one daemon writes the file, so a compare and its
 * write, with nothing awaited in between, are one compare-and-set.
 */
import type { DatabaseSync } from "node:sqlite";
import { BudgetTable } from "../budget_table.ts";
import { Workspaces } from "../workspaces.ts";
import { ContainerStates } from "../spawn/containers.ts";
import { gateOf, type WriteGate } from "../write_gate.ts";
import type {
  BudgetFallback,
  BudgetLimits,
  BudgetRow,
  ContainerMove,
  ContainerRow,
  ContainerState,
  SessionStateLog,
  WorkspaceRecord,
  WorkspaceStart,
} from "./session_state_log.ts";
import { settle } from "./sqlite_sync.ts";

/** Writes on the store's handle, inside the caller's transaction (no transaction of their own). */
export type SqliteStateWrites = (db: DatabaseSync) => void;

/** The owners this log works through; each is made on the handle when not given. */
export interface SqliteStateOwners {
  budgets?: BudgetTable;
  workspaces?: Workspaces;
  containers?: ContainerStates;
}

/** The session state log on the daemon's SQLite handle. */
export class SqliteSessionStateLog implements SessionStateLog<SqliteStateWrites> {
  readonly kind = "sqlite";
  #gate: WriteGate;
  #budgets: BudgetTable;
  #workspaces: Workspaces;
  #containers: ContainerStates;

  constructor(db: DatabaseSync, owners: SqliteStateOwners = {}) {
    this.#gate = gateOf(db);
    this.#budgets = owners.budgets ?? new BudgetTable(db);
    this.#workspaces = owners.workspaces ?? new Workspaces(db);
    this.#containers = owners.containers ?? new ContainerStates(db);
  }

  budget(sessionId: string): Promise<BudgetRow | null> {
    return settle(() => {
      const r = this.#budgets.row(sessionId);
      // The table's `SELECT *` also has updatedAt, which the interface leaves out (PostgreSQL returns none).
      return r
        ? {
          sessionId: r.sessionId,
          maxCost: r.maxCost,
          maxTokens: r.maxTokens,
          onReach: r.onReach,
          raisedCost: r.raisedCost,
          raisedTokens: r.raisedTokens,
          source: r.source,
        }
        : null;
    });
  }

  budgetIds(): Promise<string[]> {
    return settle(() => [...this.#budgets.ids()]);
  }

  async budgets(): Promise<BudgetRow[]> {
    const rows = await Promise.all((await this.budgetIds()).map((id) => this.budget(id)));
    return rows.filter((r) => r !== null);
  }

  putBudget(sessionId: string, limits: BudgetLimits, source: BudgetRow["source"]): Promise<void> {
    return settle(() => this.#gate.run(() => this.#budgets.put(sessionId, limits, source)));
  }

  raiseBudget(sessionId: string, fallback: BudgetFallback | null): Promise<boolean> {
    return settle(() => this.#gate.run(() => this.#raise(sessionId, fallback)));
  }

  raiseBudgetWrites(sessionId: string, fallback: BudgetFallback | null): SqliteStateWrites {
    return () => void this.#raise(sessionId, fallback);
  }

  deleteBudget(sessionId: string): Promise<void> {
    return settle(() => this.#gate.run(() => this.#budgets.delete(sessionId)));
  }

  recordWorkspace(sessionId: string, w: WorkspaceStart, now = Date.now()): Promise<void> {
    return settle(() => this.#gate.run(() => this.#workspaces.record(sessionId, w, now)));
  }

  workspace(sessionId: string): Promise<WorkspaceRecord | null> {
    return settle(() => this.#workspaces.get(sessionId) ?? null);
  }

  deleteWorkspace(sessionId: string): Promise<void> {
    return settle(() => this.#gate.run(() => this.#workspaces.sessionDeleted(sessionId)));
  }

  container(sessionId: string): Promise<ContainerRow | null> {
    return settle(() => this.#containers.get(sessionId) ?? null);
  }

  containers(): Promise<ContainerRow[]> {
    return settle(() => this.#containers.list());
  }

  containerLogs(sessionId: string): Promise<string | null> {
    return settle(() => this.#containers.logs(sessionId));
  }

  setContainer(
    sessionId: string,
    repo: string,
    state: ContainerState,
    move: ContainerMove = {},
  ): Promise<boolean> {
    return settle(() => {
      if (move.from && !move.from.includes(this.#containers.get(sessionId)?.state ?? null)) return false;
      const o = {
        ...(move.end !== undefined ? { end: move.end } : {}),
        ...(move.logs !== undefined ? { logs: move.logs } : {}),
      };
      this.#gate.run(() => this.#containers.set(sessionId, repo, state, o));
      return true;
    });
  }

  deleteContainer(sessionId: string, from?: readonly ContainerState[]): Promise<boolean> {
    return settle(() => {
      const state = this.#containers.get(sessionId)?.state;
      if (from && (state === undefined || !from.includes(state))) return false;
      this.#gate.run(() => this.#containers.delete(sessionId));
      return true;
    });
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  /** A default budget gets a row of its own first, so the raise outlives a restart (as lib/budgets.ts does). */
  #raise(sessionId: string, fallback: BudgetFallback | null): boolean {
    if (!this.#budgets.row(sessionId)) {
      if (!fallback) return false;
      this.#budgets.put(sessionId, fallback, fallback.source);
    }
    this.#budgets.raise(sessionId);
    return true;
  }
}
