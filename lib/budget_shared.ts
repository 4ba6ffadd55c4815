/**
 * The budget limits of every session when several replicas share one database (lib/storage/
 * session_state_log.ts): the rows live there, and each replica keeps a copy in memory so that what is read
 * synchronously (every session list row's glance, a plugin's `welcome`) stays a map lookup. A replica's own
 * writes update its copy once stored; another replica's are found by reading the rows again every
 * `BUDGET_POLL_MS` (the table holds one small row per session with a budget of its own), and each row that
 * changed is handed to `changed` so the plugin it holds hears of it: lib/replica/row_copy.ts.
 */
import type {
  BudgetFallback,
  BudgetLimits,
  BudgetRow,
  SessionStateLog,
} from "./storage/session_state_log.ts";
import { RowCopy } from "./replica/row_copy.ts";

/** How often another replica's budget change is looked for: a plugin hears of it within this. */
export const BUDGET_POLL_MS = 1_000;

/** The shared budget rows, with this replica's synchronous copy. */
export class SharedBudgetRows<Writes> {
  #log: SessionStateLog<Writes>;
  #changed: (sessionIds: string[]) => void = () => {};
  #copy: RowCopy<BudgetRow>;

  constructor(log: SessionStateLog<Writes>) {
    this.#log = log;
    this.#copy = new RowCopy({
      readAll: () => log.budgets(),
      key: (row) => row.sessionId,
      moved: (was, now) => now ? !sameRow(was, now) : was !== undefined,
      changed: (ids) => this.#changed(ids),
      what: "budgets",
    });
  }

  /** Load every row, then look for other replicas' changes, telling `changed` which sessions' rows moved. */
  async start(changed: (sessionIds: string[]) => void, pollMs = BUDGET_POLL_MS): Promise<void> {
    this.#changed = changed;
    await this.#copy.start(pollMs);
  }

  /** Read every row again and tell which sessions' rows changed. */
  async refresh(): Promise<void> {
    await this.#copy.refresh();
  }

  has(sessionId: string): boolean {
    return this.#copy.has(sessionId);
  }

  ids(): Iterable<string> {
    return this.#copy.keys();
  }

  row(sessionId: string): BudgetRow | undefined {
    return this.#copy.get(sessionId);
  }

  /** Write a session's budget afresh (nothing raised yet); the copy has it once stored. */
  async put(sessionId: string, limits: BudgetLimits, source: BudgetRow["source"]): Promise<void> {
    await this.#copy.write(() => this.#log.putBudget(sessionId, limits, source));
    this.#copy.put(sessionId, { sessionId, ...limits, raisedCost: 0, raisedTokens: 0, source });
  }

  /** The raise of an approved card, to run in the decision's transaction (then `reread` once committed). */
  raiseWrites(sessionId: string, fallback: BudgetFallback | null): Writes {
    return this.#log.raiseBudgetWrites(sessionId, fallback);
  }

  /**
   * Read one session's row again (its raise was committed): a read of every row started before is dropped,
   * since it may predate the raise. Whether the row changed.
   */
  reread(sessionId: string): Promise<boolean> {
    return this.#copy.write(async () => this.#copy.put(sessionId, await this.#log.budget(sessionId)));
  }

  async delete(sessionId: string): Promise<void> {
    await this.#copy.write(() => {
      this.#copy.put(sessionId, null);
      return this.#log.deleteBudget(sessionId);
    });
  }

  close(): void {
    this.#copy.close();
  }
}

function sameRow(a: BudgetRow | undefined, b: BudgetRow): boolean {
  return !!a && a.maxCost === b.maxCost && a.maxTokens === b.maxTokens && a.onReach === b.onReach &&
    a.raisedCost === b.raisedCost && a.raisedTokens === b.raisedTokens && a.source === b.source;
}
