/**
 * The `session_budgets` table: each session's own spending limit, what approved budget cards raised it by,
 * and where it came from. Only the limits are stored (what was spent is counted from the event log, see
 * `lib/budget_spending.ts`). It is apart from `lib/budgets.ts` so the owner's rules read as steps on the
 * table, and so the table's layout is in one place.
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import type { SessionBudget } from "./protocol.ts";
import type { Limits } from "./budget_math.ts";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS session_budgets(
  sessionId TEXT PRIMARY KEY, maxCost REAL, maxTokens INTEGER, onReach TEXT NOT NULL,
  raisedCost REAL NOT NULL DEFAULT 0, raisedTokens INTEGER NOT NULL DEFAULT 0, source TEXT NOT NULL,
  updatedAt INTEGER NOT NULL);
`;

/** One row of `session_budgets`. */
export interface BudgetRow {
  sessionId: string;
  maxCost: number | null;
  maxTokens: number | null;
  onReach: "ask" | "stop";
  raisedCost: number;
  raisedTokens: number;
  source: SessionBudget["source"];
}

/** The table's statements, and which sessions have a row (asked for every row of every session list). */
export class BudgetTable {
  #get: StatementSync;
  #put: StatementSync;
  #raise: StatementSync;
  #delete: StatementSync;
  /** Sessions with a row of their own. */
  #rows: Set<string>;

  constructor(db: DatabaseSync) {
    db.exec(SCHEMA);
    this.#get = db.prepare("SELECT * FROM session_budgets WHERE sessionId = ?");
    this.#put = db.prepare(
      `INSERT INTO session_budgets(sessionId, maxCost, maxTokens, onReach, raisedCost, raisedTokens, source,
        updatedAt) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(sessionId) DO UPDATE SET maxCost = excluded.maxCost,
        maxTokens = excluded.maxTokens, onReach = excluded.onReach, raisedCost = excluded.raisedCost,
        raisedTokens = excluded.raisedTokens, source = excluded.source, updatedAt = excluded.updatedAt`,
    );
    this.#raise = db.prepare(
      `UPDATE session_budgets SET raisedCost = raisedCost + COALESCE(maxCost, 0),
        raisedTokens = raisedTokens + COALESCE(maxTokens, 0), updatedAt = ? WHERE sessionId = ?`,
    );
    this.#delete = db.prepare("DELETE FROM session_budgets WHERE sessionId = ?");
    this.#rows = new Set(
      (db.prepare("SELECT sessionId FROM session_budgets").all() as { sessionId: string }[]).map((r) =>
        r.sessionId
      ),
    );
  }

  /** Whether the session has a row, without a query. */
  has(sessionId: string): boolean {
    return this.#rows.has(sessionId);
  }

  /** The sessions with a row. */
  ids(): Iterable<string> {
    return this.#rows;
  }

  row(sessionId: string): BudgetRow | undefined {
    return this.#get.get(sessionId) as unknown as BudgetRow | undefined;
  }

  /** Write a session's budget afresh: nothing raised yet. */
  put(
    sessionId: string,
    b: { maxCost: number | null; maxTokens: number | null; onReach: BudgetRow["onReach"] },
    source: BudgetRow["source"],
  ): void {
    this.#put.run(sessionId, b.maxCost, b.maxTokens, b.onReach, 0, 0, source, Date.now());
    this.#rows.add(sessionId);
  }

  /** Raise the budget by its own size once more (an approved budget card). */
  raise(sessionId: string): void {
    this.#raise.run(Date.now(), sessionId);
  }

  delete(sessionId: string): void {
    this.#delete.run(sessionId);
    this.#rows.delete(sessionId);
  }
}

/** The limits a budget sets, without the ones it leaves out. */
export function limitsOf(b: Limits): Limits {
  return {
    ...(b.maxCost !== undefined ? { maxCost: b.maxCost } : {}),
    ...(b.maxTokens !== undefined ? { maxTokens: b.maxTokens } : {}),
  };
}

/** A row as the protocol shows it: the limits set, and the ones in force after the raises. */
export function budgetOfRow(row: BudgetRow): SessionBudget {
  const set = limitsOf({ maxCost: row.maxCost ?? undefined, maxTokens: row.maxTokens ?? undefined });
  const current: Limits = {};
  if (set.maxCost !== undefined) current.maxCost = set.maxCost + row.raisedCost;
  if (set.maxTokens !== undefined) current.maxTokens = set.maxTokens + row.raisedTokens;
  return { ...set, onReach: row.onReach, current, source: row.source };
}
