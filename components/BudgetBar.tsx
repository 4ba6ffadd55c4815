/**
 * A session's budget as a bar: spent of the limit in force, amber from 80 %, red once reached, with what
 * happens then (the next step waits for a person, or the run stops). Renders nothing without a budget.
 */
import type { ComponentChildren } from "preact";
import type { BudgetGlance } from "../lib/protocol.ts";
import { formatCost, formatTokens } from "../ui/format.ts";

/** `near` from 80 % of the budget, `over` once reached. */
export function budgetTone(used: number): "ok" | "near" | "over" {
  return used >= 1 ? "over" : used >= 0.8 ? "near" : "ok";
}

/** "$4.10 / $5.00" and/or "82k / 100k tokens". */
export function budgetText(b: BudgetGlance): string {
  const parts: string[] = [];
  if (b.limits.maxCost !== undefined) {
    parts.push(`${formatCost(b.spent.cost)} / ${formatCost(b.limits.maxCost)}`);
  }
  if (b.limits.maxTokens !== undefined) {
    parts.push(`${formatTokens(b.spent.tokens)} / ${formatTokens(b.limits.maxTokens)} tokens`);
  }
  return parts.join(" · ");
}

/** "$5.00" and/or "200k tokens": a budget's size. */
export function limitText(limits: { maxCost?: number; maxTokens?: number }): string {
  const parts: string[] = [];
  if (limits.maxCost !== undefined) parts.push(formatCost(limits.maxCost));
  if (limits.maxTokens !== undefined) parts.push(`${formatTokens(limits.maxTokens)} tokens`);
  return parts.join(" and ");
}

/**
 * @param edit the form that changes it (operators): shown under the bar, or alone when there is no budget;
 * without it the bar is read-only and nothing shows without a budget.
 */
export function BudgetBar({ budget, edit }: { budget?: BudgetGlance; edit?: ComponentChildren }) {
  if (!budget) {
    if (!edit) return null;
    return (
      <section class="panel budget none" aria-label="Budget" data-budget="none">
        <h2>Budget</h2>
        <p class="muted small">No budget: this session may spend without limit.</p>
        {edit}
      </section>
    );
  }
  const tone = budgetTone(budget.used);
  const pct = Math.min(100, Math.round(budget.used * 100));
  return (
    <section class={`panel budget ${tone}`} aria-label="Budget" data-budget={tone}>
      <h2>Budget</h2>
      <div
        class="budget-bar"
        role="progressbar"
        aria-valuemin={0}
        aria-valuemax={100}
        aria-valuenow={pct}
        title={`${pct}% of the budget`}
      >
        <span style={`width: ${pct}%`}></span>
      </div>
      <p class="small" data-budget-text>{budgetText(budget)}</p>
      <p class="muted small">
        {tone === "over"
          ? budget.onReach === "stop"
            ? "Reached: runs are stopped until someone raises it."
            : "Reached: the next step waits for an approval."
          : budget.onReach === "stop"
          ? "When reached, the run stops."
          : "When reached, the next step waits for an approval."}
      </p>
      {edit}
    </section>
  );
}

/** The list's marker for a session near or over its budget; nothing below 80 %. */
export function BudgetMarker({ budget }: { budget?: BudgetGlance }) {
  if (!budget) return null;
  const tone = budgetTone(budget.used);
  if (tone === "ok") return null;
  return (
    <span class={`badge budget ${tone}`} data-budget-marker={tone} title={`budget: ${budgetText(budget)}`}>
      {tone === "over" ? "over budget" : `${Math.round(budget.used * 100)}% of budget`}
    </span>
  );
}
