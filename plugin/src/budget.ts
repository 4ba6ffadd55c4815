/**
 * The session's budget as the plugin enforces it. The daemon sends the limits in `welcome` and `policy` (with
 * what it counted from the log); the plugin adds each assistant message's usage as pi reports it, so a slow
 * or unreachable daemon cannot let a run overspend. The count never goes down: what the daemon says is taken
 * only when it is more (a new pi process on the same session starts from the daemon's count).
 */
import type { PluginBudget, Spent } from "../../lib/protocol/shapes.ts";
// Runtime-neutral and bundled: the daemon and the plugin say "reached" and word it the same way.
import { describeSpent as describe, type Limits, reached } from "../../lib/budget_math.ts";

export type { Limits };

const num = (
  v: unknown,
): number => (typeof v === "number" && Number.isFinite(v) && v > 0 ? v : 0);

/** A budget from a frame, or null when it is not one (an older daemon's, or none). */
function parse(raw: unknown): PluginBudget | null {
  if (typeof raw !== "object" || raw === null) return null;
  const b = raw as Record<string, unknown>;
  const limit = (v: unknown) => (num(v) > 0 ? num(v) : undefined);
  const step = (typeof b.step === "object" && b.step !== null ? b.step : {}) as Record<
    string,
    unknown
  >;
  const spent = (typeof b.spent === "object" && b.spent !== null ? b.spent : {}) as Record<
    string,
    unknown
  >;
  return {
    maxCost: limit(b.maxCost),
    maxTokens: limit(b.maxTokens),
    onReach: b.onReach === "stop" ? "stop" : "ask",
    step: { maxCost: limit(step.maxCost), maxTokens: limit(step.maxTokens) },
    spent: { cost: num(spent.cost), tokens: num(spent.tokens) },
    stopped: typeof b.stopped === "string" && b.stopped ? b.stopped : undefined,
    dailyLeft: typeof b.dailyLeft === "object" && b.dailyLeft !== null
      ? {
        cost: typeof (b.dailyLeft as Spent).cost === "number" ? (b.dailyLeft as Spent).cost : undefined,
        tokens: typeof (b.dailyLeft as Spent).tokens === "number" ? (b.dailyLeft as Spent).tokens : undefined,
      }
      : undefined,
  };
}

/** What an assistant message of pi cost: `{inputTokens, outputTokens, totalCost}`, or null without usage. */
export function messageUsage(
  usage: unknown,
): { inputTokens: number; outputTokens: number; totalCost: number } | null {
  if (typeof usage !== "object" || usage === null) return null;
  const u = usage as {
    input?: unknown;
    output?: unknown;
    cost?: { total?: unknown };
  };
  return {
    inputTokens: num(u.input),
    outputTokens: num(u.output),
    totalCost: num(u.cost?.total),
  };
}

/** "another $5.00" / "another 1,000 tokens". */
function describeStep(step: Limits): string {
  const parts: string[] = [];
  if (step.maxCost !== undefined) parts.push(`$${step.maxCost.toFixed(2)}`);
  if (step.maxTokens !== undefined) {
    parts.push(`${step.maxTokens.toLocaleString("en")} tokens`);
  }
  return parts.join(" and ");
}

/** One session's budget and count in this process (kept on its link, so a /reload keeps it). */
export class BudgetGuard {
  #budget: PluginBudget | null = null;
  #spent: Spent = { cost: 0, tokens: 0 };
  /** What was spent when the daemon last said what is left of the daily cap. */
  #spentAtUpdate: Spent = { cost: 0, tokens: 0 };
  /** The budget card being asked, shared by every call that reaches it meanwhile. */
  asking: Promise<boolean> | null = null;

  /** What was spent, as far as this process knows. */
  get spent(): Spent {
    return { ...this.#spent };
  }

  /** The limits in force, or null without a budget. */
  get limits(): Limits | null {
    const b = this.#budget;
    if (!b || (b.maxCost === undefined && b.maxTokens === undefined)) {
      return null;
    }
    return { maxCost: b.maxCost, maxTokens: b.maxTokens };
  }

  /** The daemon's budget from `welcome` or `policy`; `undefined` (an older daemon's policy) keeps the one held. */
  update(raw: unknown): void {
    if (raw === undefined) return;
    const b = parse(raw);
    this.#budget = b;
    if (!b) return;
    this.#spent = {
      cost: Math.max(this.#spent.cost, b.spent.cost),
      tokens: Math.max(this.#spent.tokens, b.spent.tokens),
    };
    this.#spentAtUpdate = { ...this.#spent };
  }

  /** Count one assistant message's usage. */
  add(
    u: { inputTokens: number; outputTokens: number; totalCost: number },
  ): void {
    this.#spent = {
      cost: this.#spent.cost + u.totalCost,
      tokens: this.#spent.tokens + u.inputTokens + u.outputTokens,
    };
  }

  /** True when a limit is reached. */
  get reached(): boolean {
    const l = this.limits;
    return !!l && reached(l, this.#spent);
  }

  /** Why every run must stop now (a `stop` budget reached, or the daemon's daily cap), else null. */
  get stopReason(): string | null {
    if (this.#budget?.stopped) return this.#budget.stopped;
    const left = this.#budget?.dailyLeft;
    if (
      left &&
      ((left.cost !== undefined &&
        this.#spent.cost - this.#spentAtUpdate.cost >= left.cost) ||
        (left.tokens !== undefined &&
          this.#spent.tokens - this.#spentAtUpdate.tokens >= left.tokens))
    ) {
      return "Daily budget reached";
    }
    if (this.#budget?.onReach === "stop" && this.reached) {
      return `Budget reached: ${describe(this.limits!, this.#spent)}`;
    }
    return null;
  }

  /** True when an `ask` budget is reached: the next tool call or turn waits for a person. */
  get mustAsk(): boolean {
    return this.#budget?.onReach === "ask" && this.reached;
  }

  /** What the budget card shows (its `args`) and the terminal's question. */
  card(): { args: Record<string, unknown>; title: string } {
    const limits = this.limits ?? {};
    const step = this.#budget?.step ?? {};
    const title = `Budget reached: ${describe(limits, this.#spent)}. Continue with another ${
      describeStep(step)
    }?`;
    return {
      args: { spent: this.spent, budget: limits, step, text: title },
      title: `lvmh: ${title}`,
    };
  }

  /**
   * A budget card was approved: raise the limits by one step, unless `asked` (the limits when the card was
   * raised) already changed, which means the daemon sent the raised budget first.
   */
  raise(asked: Limits | null): void {
    const b = this.#budget;
    if (!b) return;
    if (
      asked && (asked.maxCost !== b.maxCost || asked.maxTokens !== b.maxTokens)
    ) return;
    if (b.maxCost !== undefined && b.step.maxCost) b.maxCost += b.step.maxCost;
    if (b.maxTokens !== undefined && b.step.maxTokens) {
      b.maxTokens += b.step.maxTokens;
    }
  }
}
