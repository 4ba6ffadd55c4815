/**
 * Budgets: the one owner of each session's spending limit and of the deployment's daily cap. The limit lives
 * in its own table (`session_budgets`); what was spent is never stored but counted from the event log
 * (`lib/budget_math.ts`), so neither a restart of the daemon nor a reconnect of the plugin can reset it. The
 * plugin enforces a budget (it learns it in `welcome` and `policy`), since only it can hold a tool call or
 * abort a run at once; the daemon refuses prompts once a `stop` budget or the daily cap is reached, raises a
 * budget when its card is approved, and announces `budget.reached`.
 *
 * The parts it decides with are beside it: the limits' table (`lib/budget_table.ts`), the counts read from
 * the log (`lib/budget_spending.ts`) and the daily cap's day and state (`lib/budget_daily_cap.ts`).
 */
import type { DatabaseSync } from "node:sqlite";
import { gateOf, type WriteGate } from "./write_gate.ts";
import type { BudgetBody, BudgetGlance, BudgetView, PluginBudget, SessionBudget, Spent } from "./protocol.ts";
import type { ConfigBudget } from "./config.ts";
import type { NotifyEvent } from "./notify/kinds.ts";
import { ConflictError, sessionNotFound } from "./errors.ts";
import { describeSpent, reached } from "./budget_math.ts";
import { budgetOfRow, BudgetTable, limitsOf } from "./budget_table.ts";
import { SpendingLog } from "./budget_spending.ts";
import { DailyCap } from "./budget_daily_cap.ts";
import type { SharedBudgetRows } from "./budget_shared.ts";
import type { PgStateWrites } from "./storage/pg_session_state_log.ts";
import type postgres from "postgres";

/** What budgets need from the rest of the daemon. */
export interface BudgetDeps {
  /** The session's row: unknown (null), spawned (`agent`), or a terminal one. */
  session(sessionId: string): { agent: boolean; name?: string | null } | null;
  /** Send the session's budget to its plugin if online (a `policy` frame); false when offline. */
  send(sessionId: string, budget: PluginBudget | null): boolean;
  /** Every session with a live plugin. */
  online(): string[];
  /**
   * With replicas, whether this replica holds the session's plugin (default yes). What every replica sees
   * alike, another replica's change of a budget and a new day, is told to the plugin by its holder alone: sent
   * by each, it reached the plugin once per replica. A change made here is sent from here at once.
   */
  holds?(sessionId: string): boolean;
  /**
   * Whether this daemon announces a budget or the daily cap reached (default yes): with replicas every one
   * counts every session, and their leader alone announces, so `budget.reached` is heard once.
   */
  announces?(): boolean;
  /** Every known session with its latest event time (to count today's spending at start). */
  sessions(): { id: string; lastEventAt: number | null }[];
}

/** Defaults from the configuration. */
export interface BudgetDefaults {
  spawnBudget: ConfigBudget | null;
  localBudget: ConfigBudget | null;
  dailyBudget: ConfigBudget | null;
}

/** Every session's budget, what each spent, and the daily cap. */
export class Budgets {
  #gate: WriteGate;
  #deps: BudgetDeps;
  #defaults: BudgetDefaults;
  #table: BudgetTable;
  /** With replicas: the rows in the shared database, and this replica's copy of them. */
  #shared: SharedBudgetRows<PgStateWrites> | null;
  /** Where the limits are read: the shared rows' copy, else this daemon's own table. */
  #rows: Pick<BudgetTable, "has" | "ids" | "row">;
  #spending: SpendingLog;
  #daily: DailyCap;
  /** Sessions whose budget was already reached when last counted (announced once per crossing). */
  #over = new Set<string>();
  #listeners = new Set<(event: NotifyEvent) => void>();
  #timer: ReturnType<typeof setInterval> | undefined;

  /** @param shared with replicas, the limits shared by all of them (read once `start()` resolved). */
  constructor(
    db: DatabaseSync,
    defaults: BudgetDefaults,
    deps: BudgetDeps,
    shared: SharedBudgetRows<PgStateWrites> | null = null,
  ) {
    this.#gate = gateOf(db);
    this.#defaults = defaults;
    this.#deps = deps;
    this.#table = new BudgetTable(db);
    this.#shared = shared;
    this.#rows = shared ?? this.#table;
    this.#spending = new SpendingLog(db);
    this.#daily = new DailyCap(defaults.dailyBudget, this.#spending);
    if (defaults.dailyBudget) {
      // Today's spending is every session's: count each session active today once at start.
      const dayStart = this.#daily.dayStart();
      for (const s of deps.sessions()) if ((s.lastEventAt ?? 0) >= dayStart) this.spent(s.id);
      this.#daily.settle();
    }
    for (const id of this.#spending.sessions()) if (this.#reachedOf(id)) this.#over.add(id);
    // A new UTC day lifts the daily cap: plugins stopped by it hear so.
    this.#timer = setInterval(() => this.#checkDay(), 60_000);
    Deno.unrefTimer(this.#timer);
  }

  /**
   * With replicas: load the shared limits, then follow other replicas' changes (a plugin held here hears of a
   * budget set or raised on any replica). Without, nothing to do.
   */
  async start(): Promise<void> {
    await this.#shared?.start((ids) => {
      for (const id of ids) this.#settled(id, this.#holds(id));
    });
  }

  /** Listen for `budget.reached` (notifications, webhooks, audit); returns the unsubscribe function. */
  onReached(fn: (event: NotifyEvent) => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  /** What a session spent, from its whole log (counted once, then only what was added since). */
  spent(sessionId: string): Spent {
    return this.#spending.counter(sessionId).total;
  }

  /** The budget in force for a session: its own, else the default for its kind; null when none. */
  budgetOf(sessionId: string): SessionBudget | null {
    // Asked for every row of every list: sessions without a row and no defaults cost no query.
    if (!this.#rows.has(sessionId) && !this.#defaults.spawnBudget && !this.#defaults.localBudget) {
      return null;
    }
    const row = this.#rows.row(sessionId);
    if (row) return row.maxCost === null && row.maxTokens === null ? null : budgetOfRow(row);
    const info = this.#deps.session(sessionId);
    const d = info?.agent ? this.#defaults.spawnBudget : this.#defaults.localBudget;
    if (!info || !d) return null;
    return { ...d, current: { ...limitsOf(d) }, source: info.agent ? "spawn" : "default" };
  }

  /** What a session's row shows of its budget; undefined without one. */
  glance(sessionId: string): BudgetGlance | undefined {
    const b = this.budgetOf(sessionId);
    if (!b) return undefined;
    const spent = this.spent(sessionId);
    const used = Math.max(
      b.current.maxCost ? spent.cost / b.current.maxCost : 0,
      b.current.maxTokens ? spent.tokens / b.current.maxTokens : 0,
    );
    return { spent, limits: b.current, onReach: b.onReach, used };
  }

  /** The budgets of their own in force (sessions with a row), with what each spent; and the defaults. */
  inForce(): {
    sessions: { sessionId: string; glance: BudgetGlance }[];
    defaults: BudgetDefaults;
    today: Spent;
  } {
    const sessions: { sessionId: string; glance: BudgetGlance }[] = [];
    for (const id of this.#rows.ids()) {
      const glance = this.glance(id);
      if (glance) sessions.push({ sessionId: id, glance });
    }
    sessions.sort((a, b) => b.glance.used - a.glance.used);
    return { sessions, defaults: this.#defaults, today: this.#daily.spent() };
  }

  /** `GET /api/sessions/:id/budget`. @throws {NotFoundError} for an unknown session. */
  get(sessionId: string): BudgetView {
    if (!this.#deps.session(sessionId)) throw sessionNotFound(sessionId);
    const budget = this.budgetOf(sessionId);
    const spent = this.spent(sessionId);
    const daily = this.#defaults.dailyBudget;
    return {
      budget,
      spent,
      reached: this.#refusal(sessionId),
      ...(daily ? { daily: { ...limitsOf(daily), spent: this.#daily.spent() } } : {}),
    };
  }

  /**
   * Set (or with null remove) a session's budget; the plugin hears of it at once when online.
   * @throws {NotFoundError} for an unknown session.
   */
  set(sessionId: string, body: BudgetBody): BudgetView {
    if (this.#shared) throw new Error("budgets: with replicas a budget is set with put()");
    if (!this.#deps.session(sessionId)) throw sessionNotFound(sessionId);
    this.#gate.run(() => this.#table.put(sessionId, limitsOfBody(body), "session"));
    this.#settled(sessionId);
    return this.get(sessionId);
  }

  /**
   * `set`, on whichever store holds the limits: with replicas the shared database (every replica's plugin
   * hears of it: the holder's at once when it is this one, else at its next read of the rows).
   * @throws {NotFoundError} for an unknown session.
   */
  async put(sessionId: string, body: BudgetBody): Promise<BudgetView> {
    if (!this.#shared) return this.set(sessionId, body);
    if (!this.#deps.session(sessionId)) throw sessionNotFound(sessionId);
    await this.#shared.put(sessionId, limitsOfBody(body), "session");
    this.#settled(sessionId);
    return this.get(sessionId);
  }

  /** A budget card was approved: raise the budget by its original size and tell the plugin. */
  approved(sessionId: string): void {
    if (this.#shared) throw new Error("budgets: with replicas a raise is stored with its decision");
    this.#gate.run(() => this.raise(sessionId));
    this.raised(sessionId);
  }

  /**
   * Store the raise of an approved budget card: its writes only, so that `Approvals` runs them in the
   * transaction that stores the decision (a crash keeps both or neither). `raised` tells the plugin after.
   */
  raise(sessionId: string, handle?: unknown): void | Promise<unknown> {
    const budget = this.budgetOf(sessionId);
    if (!budget) return;
    if (this.#shared) {
      // One increment on the decision's PostgreSQL transaction (`handle`); the copy re-reads it after.
      const fallback = budget.source !== "session" && !this.#shared.row(sessionId)
        ? { ...limitsOfBody(budget), source: budget.source }
        : null;
      return this.#shared.raiseWrites(sessionId, fallback)(handle as postgres.TransactionSql);
    }
    if (budget.source !== "session" && !this.#table.row(sessionId)) {
      // A default budget gets a row of its own, so the raise outlives a restart.
      this.#table.put(sessionId, {
        maxCost: budget.maxCost ?? null,
        maxTokens: budget.maxTokens ?? null,
        onReach: budget.onReach,
      }, budget.source);
    }
    this.#table.raise(sessionId);
  }

  /** The raise of a budget card is stored: the session may be under its budget again; the plugin hears. */
  raised(sessionId: string): void {
    if (!this.#shared) return this.#raisedHere(sessionId);
    // The plugin raised its own limit on the approval: the stored one reaches it once read back.
    this.#shared.reread(sessionId).then(
      () => this.#raisedHere(sessionId),
      (error) =>
        console.error(`lvmh: session ${sessionId}: raised budget not re-read: ${(error as Error).message}`),
    );
  }

  #raisedHere(sessionId: string): void {
    if (!this.#reachedOf(sessionId)) this.#over.delete(sessionId);
    this.#push(sessionId);
  }

  /** A session's limits changed: whether it is over them starts afresh, and its plugin hears (`tell`). */
  #settled(sessionId: string, tell = true): void {
    this.#over.delete(sessionId);
    if (this.#reachedOf(sessionId)) this.#over.add(sessionId);
    if (tell) this.#push(sessionId);
  }

  #holds(sessionId: string): boolean {
    return this.#deps.holds?.(sessionId) ?? true;
  }

  /** The `budget` of a session's `welcome`/`policy` frame: null when it has none and nothing stops it. */
  wire(sessionId: string): PluginBudget | null {
    const b = this.budgetOf(sessionId);
    const stopped = this.#daily.over ? this.#daily.text() : undefined;
    const daily = this.#defaults.dailyBudget;
    if (!b && !daily) return null;
    const today = daily ? this.#daily.spent() : null;
    const dailyLeft = daily && today
      ? {
        ...(daily.maxCost !== undefined ? { cost: daily.maxCost - today.cost } : {}),
        ...(daily.maxTokens !== undefined ? { tokens: daily.maxTokens - today.tokens } : {}),
      }
      : undefined;
    return {
      ...(b?.current ?? {}),
      onReach: b?.onReach ?? "stop",
      step: b ? limitsOf(b) : {},
      spent: this.spent(sessionId),
      ...(stopped ? { stopped } : {}),
      ...(dailyLeft ? { dailyLeft } : {}),
    };
  }

  /**
   * Refuse a prompt while a `stop` budget or the daily cap is reached (an `ask` budget lets the prompt in:
   * its card holds the first turn).
   * @throws {ConflictError} `budget reached: …`.
   */
  checkPrompt(sessionId: string): void {
    const why = this.#refusal(sessionId);
    if (why) throw new ConflictError(why);
  }

  /** Events of a session were committed: count them, and announce a budget (or the daily cap) reached. */
  committed(sessionId: string): void {
    if (!this.#defaults.dailyBudget && !this.budgetOf(sessionId)) return;
    this.#checkDay();
    const before = this.#spending.has(sessionId);
    this.spent(sessionId);
    if (!before) {
      // First count since start: what was reached before is not news.
      if (this.#reachedOf(sessionId)) this.#over.add(sessionId);
    } else if (this.#reachedOf(sessionId) && !this.#over.has(sessionId)) {
      this.#over.add(sessionId);
      const b = this.budgetOf(sessionId)!;
      const spent = this.spent(sessionId);
      this.#announce({
        type: "budget.reached",
        at: Date.now(),
        sessionId,
        data: {
          sessionName: this.#deps.session(sessionId)?.name ?? sessionId,
          scope: "session",
          onReach: b.onReach,
          spent,
          budget: b.current,
          text: `Budget reached: ${describeSpent(b.current, spent)}`,
          path: `/sessions/${encodeURIComponent(sessionId)}`,
        },
      });
    }
    if (this.#daily.crossed()) {
      this.#announce({
        type: "budget.reached",
        at: Date.now(),
        sessionId: null,
        data: {
          scope: "daily",
          day: this.#daily.today,
          text: this.#daily.text(),
          spent: this.#daily.spent(),
          budget: limitsOf(this.#daily.limits!),
        },
      });
      for (const id of this.#deps.online()) if (this.#holds(id)) this.#push(id);
    }
  }

  /** Spending per UTC day of every session counted so far (for the usage page). */
  byDay(sessionId: string): Map<string, Spent> {
    return this.#spending.counter(sessionId).byDay;
  }

  /** A session was deleted: forget its budget and count. */
  sessionDeleted(sessionId: string): void {
    this.#spending.forget(sessionId);
    this.#over.delete(sessionId);
    if (this.#shared) {
      this.#shared.delete(sessionId).catch((error) =>
        console.error(`lvmh: session ${sessionId}: budget not deleted: ${(error as Error).message}`)
      );
    } else this.#gate.run(() => this.#table.delete(sessionId));
  }

  /** Stop the day timer (and with replicas the reading of the shared limits). */
  close(): void {
    clearInterval(this.#timer);
    this.#shared?.close();
  }

  #reachedOf(sessionId: string): boolean {
    const b = this.budgetOf(sessionId);
    return !!b && reached(b.current, this.spent(sessionId));
  }

  #refusal(sessionId: string): string | null {
    if (this.#daily.over) return this.#daily.text();
    const b = this.budgetOf(sessionId);
    if (!b || b.onReach !== "stop" || !reached(b.current, this.spent(sessionId))) return null;
    return `budget reached: ${describeSpent(b.current, this.spent(sessionId))}; raise it to go on`;
  }

  /** A new UTC day lifts a daily cap reached yesterday: the plugins it stopped hear so. */
  #checkDay(): void {
    if (this.#daily.newDay()) { for (const id of this.#deps.online()) if (this.#holds(id)) this.#push(id); }
  }

  #push(sessionId: string): void {
    this.#deps.send(sessionId, this.wire(sessionId));
  }

  #announce(event: NotifyEvent): void {
    if (this.#deps.announces?.() === false) return;
    for (const fn of this.#listeners) {
      try {
        fn(event);
      } catch (error) {
        console.error(`lvmh: budget.reached not sent: ${(error as Error).message}`);
      }
    }
  }
}

/** The limits a `PUT …/budget` body (or a budget in force) sets, null for what it leaves out. */
function limitsOfBody(
  b: { maxCost?: number | null; maxTokens?: number | null; onReach?: "ask" | "stop" } | null,
): { maxCost: number | null; maxTokens: number | null; onReach: "ask" | "stop" } {
  return { maxCost: b?.maxCost ?? null, maxTokens: b?.maxTokens ?? null, onReach: b?.onReach ?? "ask" };
}
