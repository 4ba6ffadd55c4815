/**
 * Budgets: the one owner of each session's spending limit and of the deployment's daily cap. The limit lives
 * in its own table (`session_budgets`); what was spent is never stored but counted from the event log
 * (`lib/budget_math.ts`), so neither a restart of the daemon nor a reconnect of the plugin can reset it. The
 * plugin enforces a budget (it learns it in `welcome` and `policy`), since only it can hold a tool call or
 * abort a run at once; the daemon refuses prompts once a `stop` budget or the daily cap is reached, raises a
 * budget when its card is approved, and announces `budget.reached`.
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import { gateOf, type WriteGate } from "./write_gate.ts";
import type { BudgetBody, BudgetGlance, BudgetView, PluginBudget, SessionBudget, Spent } from "./protocol.ts";
import type { ConfigBudget } from "./config.ts";
import type { NotifyEvent } from "./notify/kinds.ts";
import { ConflictError, sessionNotFound } from "./errors.ts";
import {
  type CountedEvent,
  describeSpent,
  type Limits,
  plus,
  reached,
  SpentCounter,
  utcDay,
} from "./budget_math.ts";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS session_budgets(
  sessionId TEXT PRIMARY KEY, maxCost REAL, maxTokens INTEGER, onReach TEXT NOT NULL,
  raisedCost REAL NOT NULL DEFAULT 0, raisedTokens INTEGER NOT NULL DEFAULT 0, source TEXT NOT NULL,
  updatedAt INTEGER NOT NULL);
`;

/** The events that count: the rest of the log is never read here. */
const COUNTED_TYPES = "('message_end','agent_start','agent_end')";

interface Row {
  sessionId: string;
  maxCost: number | null;
  maxTokens: number | null;
  onReach: "ask" | "stop";
  raisedCost: number;
  raisedTokens: number;
  source: SessionBudget["source"];
}

/** What budgets need from the rest of the daemon. */
export interface BudgetDeps {
  /** The session's row: unknown (null), spawned (`agent`), or a terminal one. */
  session(sessionId: string): { agent: boolean; name?: string | null } | null;
  /** Send the session's budget to its plugin if online (a `policy` frame); false when offline. */
  send(sessionId: string, budget: PluginBudget | null): boolean;
  /** Every session with a live plugin. */
  online(): string[];
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
  #db: DatabaseSync;
  #gate: WriteGate;
  #deps: BudgetDeps;
  #defaults: BudgetDefaults;
  #get: StatementSync;
  #put: StatementSync;
  #raise: StatementSync;
  #delete: StatementSync;
  #maxSeq: StatementSync;
  #scan: StatementSync;
  /** Per session: the log counted so far (up to `seq`). */
  #counted = new Map<string, { seq: number; counter: SpentCounter }>();
  /** Sessions whose budget was already reached when last counted (announced once per crossing). */
  #over = new Set<string>();
  #today = utcDay(Date.now());
  #dailyOver = false;
  #listeners = new Set<(event: NotifyEvent) => void>();
  /** Sessions with a row of their own. */
  #rows: Set<string>;
  #timer: ReturnType<typeof setInterval> | undefined;

  constructor(db: DatabaseSync, defaults: BudgetDefaults, deps: BudgetDeps) {
    this.#db = db;
    this.#gate = gateOf(db);
    this.#defaults = defaults;
    this.#deps = deps;
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
    this.#maxSeq = db.prepare("SELECT COALESCE(MAX(seq), 0) AS seq FROM events WHERE sessionId = ?");
    this.#scan = db.prepare(
      `SELECT seq, ts, type, payload FROM events WHERE sessionId = ? AND seq > ? AND seq <= ?
        AND type IN ${COUNTED_TYPES} ORDER BY seq`,
    );
    if (defaults.dailyBudget) {
      // Today's spending is every session's: count each session active today once at start.
      const dayStart = Date.parse(`${this.#today}T00:00:00Z`);
      for (const s of deps.sessions()) if ((s.lastEventAt ?? 0) >= dayStart) this.spent(s.id);
      this.#dailyOver = this.#dailyReached();
    }
    for (const [id] of this.#counted) if (this.#reachedOf(id)) this.#over.add(id);
    // A new UTC day lifts the daily cap: plugins stopped by it hear so.
    this.#timer = setInterval(() => this.#checkDay(), 60_000);
    Deno.unrefTimer(this.#timer);
  }

  /** Listen for `budget.reached` (notifications, webhooks, audit); returns the unsubscribe function. */
  onReached(fn: (event: NotifyEvent) => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  /** What a session spent, from its whole log (counted once, then only what was added since). */
  spent(sessionId: string): Spent {
    return this.#count(sessionId).counter.total;
  }

  /** The budget in force for a session: its own, else the default for its kind; null when none. */
  budgetOf(sessionId: string): SessionBudget | null {
    // Asked for every row of every list: sessions without a row and no defaults cost no query.
    if (!this.#rows.has(sessionId) && !this.#defaults.spawnBudget && !this.#defaults.localBudget) return null;
    const row = this.#get.get(sessionId) as unknown as Row | undefined;
    if (row) return row.maxCost === null && row.maxTokens === null ? null : view(row);
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
    for (const id of this.#rows) {
      const glance = this.glance(id);
      if (glance) sessions.push({ sessionId: id, glance });
    }
    sessions.sort((a, b) => b.glance.used - a.glance.used);
    return { sessions, defaults: this.#defaults, today: this.#dailyView() };
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
      ...(daily ? { daily: { ...limitsOf(daily), spent: this.#dailyView() } } : {}),
    };
  }

  /**
   * Set (or with null remove) a session's budget; the plugin hears of it at once when online.
   * @throws {NotFoundError} for an unknown session.
   */
  set(sessionId: string, body: BudgetBody): BudgetView {
    if (!this.#deps.session(sessionId)) throw sessionNotFound(sessionId);
    this.#gate.run(() =>
      this.#put.run(
        sessionId,
        body?.maxCost ?? null,
        body?.maxTokens ?? null,
        body?.onReach ?? "ask",
        0,
        0,
        "session",
        Date.now(),
      )
    );
    this.#rows.add(sessionId);
    this.#over.delete(sessionId);
    if (this.#reachedOf(sessionId)) this.#over.add(sessionId);
    this.#push(sessionId);
    return this.get(sessionId);
  }

  /** A budget card was approved: raise the budget by its original size and tell the plugin. */
  approved(sessionId: string): void {
    this.#gate.run(() => this.raise(sessionId));
    this.raised(sessionId);
  }

  /**
   * Store the raise of an approved budget card: its writes only, so that `Approvals` runs them in the
   * transaction that stores the decision (a crash keeps both or neither). `raised` tells the plugin after.
   */
  raise(sessionId: string): void {
    const budget = this.budgetOf(sessionId);
    if (!budget) return;
    if (budget.source !== "session" && !this.#get.get(sessionId)) {
      // A default budget gets a row of its own, so the raise outlives a restart.
      this.#put.run(
        sessionId,
        budget.maxCost ?? null,
        budget.maxTokens ?? null,
        budget.onReach,
        0,
        0,
        budget.source,
        Date.now(),
      );
      this.#rows.add(sessionId);
    }
    this.#raise.run(Date.now(), sessionId);
  }

  /** The raise of a budget card is stored: the session may be under its budget again; the plugin hears. */
  raised(sessionId: string): void {
    if (!this.#reachedOf(sessionId)) this.#over.delete(sessionId);
    this.#push(sessionId);
  }

  /** The `budget` of a session's `welcome`/`policy` frame: null when it has none and nothing stops it. */
  wire(sessionId: string): PluginBudget | null {
    const b = this.budgetOf(sessionId);
    const stopped = this.#dailyOver ? this.#dailyText() : undefined;
    const daily = this.#defaults.dailyBudget;
    if (!b && !daily) return null;
    const today = daily ? this.#dailyView() : null;
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
    const before = this.#counted.has(sessionId);
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
    if (this.#defaults.dailyBudget && !this.#dailyOver && this.#dailyReached()) {
      this.#dailyOver = true;
      this.#announce({
        type: "budget.reached",
        at: Date.now(),
        sessionId: null,
        data: {
          scope: "daily",
          day: this.#today,
          text: this.#dailyText(),
          spent: this.#dailyView(),
          budget: limitsOf(this.#defaults.dailyBudget),
        },
      });
      for (const id of this.#deps.online()) this.#push(id);
    }
  }

  /** Spending per UTC day of every session counted so far (for the usage page). */
  byDay(sessionId: string): Map<string, Spent> {
    return this.#count(sessionId).counter.byDay;
  }

  /** A session was deleted: forget its budget and count. */
  sessionDeleted(sessionId: string): void {
    this.#counted.delete(sessionId);
    this.#over.delete(sessionId);
    this.#gate.run(() => this.#delete.run(sessionId));
    this.#rows.delete(sessionId);
  }

  /** Stop the day timer. */
  close(): void {
    clearInterval(this.#timer);
  }

  #count(sessionId: string): { seq: number; counter: SpentCounter } {
    let c = this.#counted.get(sessionId);
    if (!c) this.#counted.set(sessionId, c = { seq: 0, counter: new SpentCounter() });
    const max = (this.#maxSeq.get(sessionId) as { seq: number }).seq;
    if (max <= c.seq) return c;
    const rows = this.#scan.all(sessionId, c.seq, max) as { ts: number; type: string; payload: string }[];
    for (const r of rows) {
      let p: Partial<CountedEvent>;
      try {
        p = JSON.parse(r.payload);
      } catch {
        continue;
      }
      c.counter.add({ ts: r.ts, type: r.type, message: p.message, usage: p.usage });
    }
    c.seq = max;
    return c;
  }

  #reachedOf(sessionId: string): boolean {
    const b = this.budgetOf(sessionId);
    return !!b && reached(b.current, this.spent(sessionId));
  }

  #refusal(sessionId: string): string | null {
    if (this.#dailyOver) return this.#dailyText();
    const b = this.budgetOf(sessionId);
    if (!b || b.onReach !== "stop" || !reached(b.current, this.spent(sessionId))) return null;
    return `budget reached: ${describeSpent(b.current, this.spent(sessionId))}; raise it to go on`;
  }

  /** What every session counted so far spent today (each session active today is counted at start). */
  #dailyView(): Spent {
    let total: Spent = { cost: 0, tokens: 0 };
    for (const c of this.#counted.values()) total = plus(total, c.counter.byDay.get(this.#today) ?? total0);
    return total;
  }

  #dailyReached(): boolean {
    const d = this.#defaults.dailyBudget;
    if (!d) return false;
    return reached(limitsOf(d), this.#dailyView());
  }

  #dailyText(): string {
    const d = this.#defaults.dailyBudget!;
    return `daily budget reached: ${describeSpent(limitsOf(d), this.#dailyView())} today (UTC)`;
  }

  #checkDay(): void {
    const today = utcDay(Date.now());
    if (today === this.#today) return;
    this.#today = today;
    if (!this.#dailyOver) return;
    this.#dailyOver = this.#dailyReached();
    if (!this.#dailyOver) { for (const id of this.#deps.online()) this.#push(id); }
  }

  #push(sessionId: string): void {
    this.#deps.send(sessionId, this.wire(sessionId));
  }

  #announce(event: NotifyEvent): void {
    for (const fn of this.#listeners) {
      try {
        fn(event);
      } catch (error) {
        console.error(`lvmh: budget.reached not sent: ${(error as Error).message}`);
      }
    }
  }
}

const total0: Spent = { cost: 0, tokens: 0 };

function limitsOf(b: Limits): Limits {
  return {
    ...(b.maxCost !== undefined ? { maxCost: b.maxCost } : {}),
    ...(b.maxTokens !== undefined ? { maxTokens: b.maxTokens } : {}),
  };
}

function view(row: Row): SessionBudget {
  const set = limitsOf({ maxCost: row.maxCost ?? undefined, maxTokens: row.maxTokens ?? undefined });
  const current: Limits = {};
  if (set.maxCost !== undefined) current.maxCost = set.maxCost + row.raisedCost;
  if (set.maxTokens !== undefined) current.maxTokens = set.maxTokens + row.raisedTokens;
  return { ...set, onReach: row.onReach, current, source: row.source };
}
