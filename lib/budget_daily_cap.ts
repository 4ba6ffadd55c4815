/**
 * The deployment's daily cap (`LVMH_DAILY_BUDGET`): what every session spent today (UTC) against one limit.
 * Whether it is reached is kept as state, since crossing it is announced once and a new UTC day lifts it
 * (the plugins it stopped hear so). The announcing and telling is the owner's (`lib/budgets.ts`); this
 * module is the day, the cap's state and its words.
 */
import type { Spent } from "./protocol.ts";
import type { ConfigBudget } from "./config.ts";
import { describeSpent, reached, utcDay } from "./budget_math.ts";
import { limitsOf } from "./budget_table.ts";
import type { SpendingLog } from "./budget_spending.ts";

/** The daily cap, over the sessions `spending` counted. */
export class DailyCap {
  #today = utcDay(Date.now());
  #over = false;

  constructor(readonly limits: ConfigBudget | null, private spending: SpendingLog) {}

  /** The UTC day the cap counts, `YYYY-MM-DD`. */
  get today(): string {
    return this.#today;
  }

  /** Whether the cap was reached today (prompts are refused). */
  get over(): boolean {
    return this.#over;
  }

  /** When today began (UTC), in ms. */
  dayStart(): number {
    return Date.parse(`${this.#today}T00:00:00Z`);
  }

  /** What every session counted so far spent today (each session active today is counted at start). */
  spent(): Spent {
    return this.spending.spentOn(this.#today);
  }

  /** Whether today's spending reaches the cap (never without one). */
  reached(): boolean {
    const d = this.limits;
    if (!d) return false;
    return reached(limitsOf(d), this.spent());
  }

  /** Take the state from the counts (at start: a cap reached before is no news). */
  settle(): void {
    this.#over = this.reached();
  }

  /** @returns true once, when the counts first reach the cap today (the caller announces it). */
  crossed(): boolean {
    if (!this.limits || this.#over || !this.reached()) return false;
    this.#over = true;
    return true;
  }

  /** @returns true when a new UTC day lifted the cap reached yesterday (the caller tells the plugins). */
  newDay(): boolean {
    const today = utcDay(Date.now());
    if (today === this.#today) return false;
    this.#today = today;
    if (!this.#over) return false;
    this.#over = this.reached();
    return !this.#over;
  }

  /** Why a prompt is refused while the cap is reached. */
  text(): string {
    return `daily budget reached: ${describeSpent(limitsOf(this.limits!), this.spent())} today (UTC)`;
  }
}
