/**
 * The pure parts of budgets: counting what a session spent from its event log, and telling whether a budget
 * is reached and how far. The daemon (`lib/budgets.ts`) uses these, and so does the plugin (bundled into it:
 * this file imports types only), which keeps its own count the same way from pi's messages.
 */
import type { Spent } from "./protocol.ts";

/** Limits of a budget: dollars and/or input+output tokens. */
export interface Limits {
  maxCost?: number;
  maxTokens?: number;
}

/** A usage as the protocol carries it (`agent_end.usage`, `message.usage`). */
export interface UsageLike {
  inputTokens?: unknown;
  outputTokens?: unknown;
  totalCost?: unknown;
}

/** One event of the log, as far as counting goes. */
export interface CountedEvent {
  ts: number;
  type: string;
  /** `message_end`: the message; `agent_end`: the run's usage. */
  message?: { role?: unknown; usage?: UsageLike } | null;
  usage?: UsageLike | null;
}

const num = (
  v: unknown,
): number => (typeof v === "number" && Number.isFinite(v) && v > 0 ? v : 0);

/** Dollars and tokens of one usage. */
export function spentOf(u: UsageLike | null | undefined): Spent {
  return {
    cost: num(u?.totalCost),
    tokens: num(u?.inputTokens) + num(u?.outputTokens),
  };
}

/** The UTC day of a timestamp, `YYYY-MM-DD`. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/**
 * A running count over a session's log: every assistant message's usage (newer plugins put it on
 * `message_end`), or a run's `agent_end` usage when none of its messages carried one (older plugins).
 */
export class SpentCounter {
  total: Spent = { cost: 0, tokens: 0 };
  /** Per UTC day, for the daily cap and the usage page. */
  byDay = new Map<string, Spent>();
  #runCounted = false;

  /** Count one event; returns what it added (zero for most). */
  add(e: CountedEvent): Spent {
    let s: Spent | null = null;
    if (e.type === "agent_start") this.#runCounted = false;
    else if (
      e.type === "message_end" && e.message?.role === "assistant" &&
      e.message.usage
    ) {
      this.#runCounted = true;
      s = spentOf(e.message.usage);
    } else if (e.type === "agent_end") {
      if (!this.#runCounted) s = spentOf(e.usage);
      this.#runCounted = false;
    }
    if (!s || (s.cost === 0 && s.tokens === 0)) return { cost: 0, tokens: 0 };
    this.total = plus(this.total, s);
    const day = utcDay(e.ts);
    this.byDay.set(day, plus(this.byDay.get(day) ?? { cost: 0, tokens: 0 }, s));
    return s;
  }
}

/** The sum of two amounts. */
export function plus(a: Spent, b: Spent): Spent {
  return { cost: a.cost + b.cost, tokens: a.tokens + b.tokens };
}

/** True when `spent` reached any limit of `limits` (a budget with no limit is never reached). */
export function reached(limits: Limits, spent: Spent): boolean {
  return (limits.maxCost !== undefined && spent.cost >= limits.maxCost) ||
    (limits.maxTokens !== undefined && spent.tokens >= limits.maxTokens);
}

/** "$5.03 of $5.00" or "120,000 of 100,000 tokens" (both when both limits are set). */
export function describeSpent(limits: Limits, spent: Spent): string {
  const parts: string[] = [];
  if (limits.maxCost !== undefined) {
    parts.push(`$${spent.cost.toFixed(2)} of $${limits.maxCost.toFixed(2)}`);
  }
  if (limits.maxTokens !== undefined) {
    parts.push(
      `${Math.round(spent.tokens).toLocaleString("en")} of ${limits.maxTokens.toLocaleString("en")} tokens`,
    );
  }
  return parts.join(", ");
}
