/**
 * REST shapes of a session's budget (Transport 2): the body that sets it and what the routes, the list and the
 * session page report of it. Its own module because spawn bodies and session summaries both reach for it.
 */
import { z } from "zod";
import { BudgetOnReach, type Spent } from "./shapes.ts";

/** `PUT /api/sessions/:id/budget`: dollars and/or input+output tokens; `{}` removes the budget. */
export const BudgetBody = z.strictObject({
  maxCost: z.number().positive().max(1_000_000).optional(),
  maxTokens: z.number().int().positive().max(1e12).optional(),
  onReach: BudgetOnReach.default("ask"),
}).transform((b) => (b.maxCost === undefined && b.maxTokens === undefined ? null : b));
export type BudgetBody = z.infer<typeof BudgetBody>;
/** A session's budget as set (the size of one approval) and in force (raised by approvals). */
export interface SessionBudget {
  maxCost?: number;
  maxTokens?: number;
  onReach: BudgetOnReach;
  /** The limits now: the set ones plus every approved raise. */
  current: { maxCost?: number; maxTokens?: number };
  /** Where the budget came from: set on the session, or a default (`LVMH_SPAWN_BUDGET`, `LVMH_BUDGET`). */
  source: "session" | "spawn" | "default";
}
/** What the list and the session page show of a budget: spent of the limits, `used` the larger share. */
export interface BudgetGlance {
  spent: Spent;
  limits: { maxCost?: number; maxTokens?: number };
  onReach: BudgetOnReach;
  used: number;
}
/** `GET`/`PUT /api/sessions/:id/budget`: the budget (null: none), what was spent, and whether it is reached. */
export interface BudgetView {
  budget: SessionBudget | null;
  spent: Spent;
  /** Why prompts are refused now (`budget reached`, `daily budget reached`), or null. */
  reached: string | null;
  /** The deployment-wide daily cap (`LVMH_DAILY_BUDGET`) and what today cost, when one is set. */
  daily?: { maxCost?: number; maxTokens?: number; spent: Spent };
}
