/**
 * The budget limits of every session when several replicas share one database (lib/storage/
 * session_state_log.ts): the rows live there, and each replica keeps a copy in memory so that what is read
 * synchronously (every session list row's glance, a plugin's `welcome`) stays a map lookup. A replica's own
 * writes update its copy once stored; another replica's are found by reading the rows again every
 * `BUDGET_POLL_MS` (the table holds one small row per session with a budget of its own, and the log has no
 * change hint), and each row that changed is handed to `changed` so the plugin it holds hears of it.
 *
 * A read of every row started before one of this replica's own writes may not see it: its result is dropped
 * (the next read does), so a just-set or just-raised budget never flickers back to the old one.
 */
import type {
  BudgetFallback,
  BudgetLimits,
  BudgetRow,
  SessionStateLog,
} from "./storage/session_state_log.ts";

/** How often another replica's budget change is looked for: a plugin hears of it within this. */
export const BUDGET_POLL_MS = 1_000;

/** The shared budget rows, with this replica's synchronous copy. */
export class SharedBudgetRows<Writes> {
  #log: SessionStateLog<Writes>;
  #rows = new Map<string, BudgetRow>();
  /** Bumped by each of this replica's writes: a read started before one is stale. */
  #writes = 0;
  #timer: ReturnType<typeof setInterval> | undefined;
  #reading = false;
  #changed: (sessionIds: string[]) => void = () => {};

  constructor(log: SessionStateLog<Writes>) {
    this.#log = log;
  }

  /** Load every row, then look for other replicas' changes, telling `changed` which sessions' rows moved. */
  async start(changed: (sessionIds: string[]) => void, pollMs = BUDGET_POLL_MS): Promise<void> {
    this.#changed = changed;
    await this.refresh();
    this.#timer = setInterval(() => {
      this.refresh().catch((error) => {
        // The next period reads again; meanwhile the copy is what was read last.
        console.error(`lvmh: budgets not re-read: ${(error as Error).message}`);
      });
    }, pollMs);
    Deno.unrefTimer(this.#timer);
  }

  /** Read every row again and tell which sessions' rows changed. */
  async refresh(): Promise<void> {
    if (this.#reading) return;
    this.#reading = true;
    try {
      const at = this.#writes;
      const rows = await this.#log.budgets();
      if (at !== this.#writes) return;
      const now = new Map(rows.map((r) => [r.sessionId, r]));
      const moved: string[] = [];
      for (const [id, row] of now) if (!sameRow(this.#rows.get(id), row)) moved.push(id);
      for (const id of this.#rows.keys()) if (!now.has(id)) moved.push(id);
      this.#rows = now;
      if (moved.length) this.#changed(moved);
    } finally {
      this.#reading = false;
    }
  }

  has(sessionId: string): boolean {
    return this.#rows.has(sessionId);
  }

  ids(): Iterable<string> {
    return this.#rows.keys();
  }

  row(sessionId: string): BudgetRow | undefined {
    return this.#rows.get(sessionId);
  }

  /** Write a session's budget afresh (nothing raised yet); the copy has it once stored. */
  async put(sessionId: string, limits: BudgetLimits, source: BudgetRow["source"]): Promise<void> {
    this.#writes++;
    await this.#log.putBudget(sessionId, limits, source);
    this.#writes++;
    this.#rows.set(sessionId, { sessionId, ...limits, raisedCost: 0, raisedTokens: 0, source });
  }

  /** The raise of an approved card, to run in the decision's transaction (then `reread` once committed). */
  raiseWrites(sessionId: string, fallback: BudgetFallback | null): Writes {
    return this.#log.raiseBudgetWrites(sessionId, fallback);
  }

  /**
   * Read one session's row again (its raise was committed): a read of every row started before is dropped,
   * since it may predate the raise. Whether the row changed.
   */
  async reread(sessionId: string): Promise<boolean> {
    this.#writes++;
    const row = await this.#log.budget(sessionId);
    this.#writes++;
    const was = this.#rows.get(sessionId);
    if (row) this.#rows.set(sessionId, row);
    else this.#rows.delete(sessionId);
    return row ? !sameRow(was, row) : was !== undefined;
  }

  async delete(sessionId: string): Promise<void> {
    this.#writes++;
    this.#rows.delete(sessionId);
    await this.#log.deleteBudget(sessionId);
    this.#writes++;
  }

  close(): void {
    clearInterval(this.#timer);
  }
}

function sameRow(a: BudgetRow | undefined, b: BudgetRow): boolean {
  return !!a && a.maxCost === b.maxCost && a.maxTokens === b.maxTokens && a.onReach === b.onReach &&
    a.raisedCost === b.raisedCost && a.raisedTokens === b.raisedTokens && a.source === b.source;
}
