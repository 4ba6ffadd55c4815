/**
 * The budget's hold on a running pi: before each tool call and model request a reached budget either asks a
 * person for another step (a budget card, through the run's approvals) or stops the run, and a run the budget
 * stops is aborted at once. Apart from the binding, which calls it from pi's `tool_call` and `context` hooks;
 * `budget.ts` counts and words the budget, this decides what pi does about it.
 */
import type { Approvals, Block } from "./approvals.ts";
import type { BudgetGuard } from "./budget.ts";
import type { Logger } from "./log.ts";
import type { PiContext } from "./pi_types.ts";

/**
 * The budget's say before a tool call or a turn: undefined when within it; else a promise of a block (the run
 * stops) or undefined (a person approved another step of the budget).
 * @param options.guard the session's budget (none before session_start and after shutdown)
 */
export function budgetGate(
  ctx: PiContext,
  options: { guard: BudgetGuard | undefined; approvals: Approvals; log: Logger },
): Promise<Block | undefined> | undefined {
  const { guard, approvals, log } = options;
  if (!guard) return undefined;
  const stop = guard.stopReason;
  if (stop) {
    abortForBudget(ctx, log);
    return Promise.resolve({ block: true, reason: stop });
  }
  if (!guard.mustAsk) return undefined;
  if (!guard.asking) {
    const asked = guard.limits;
    const { args, title } = guard.card();
    guard.asking = approvals.askBudget(ctx, args, title).then((ok) => {
      if (ok) guard.raise(asked);
      return ok;
    }, (err) => {
      log("budget approval failed", err);
      return false; // fail closed: a budget that cannot be asked about stops the run
    }).finally(() => guard.asking = null);
  }
  return guard.asking.then((ok) => {
    if (ok) return undefined;
    abortForBudget(ctx, log);
    return { block: true, reason: "Budget reached: the run was stopped" };
  });
}

/**
 * Abort the run now: before a model request (`context`) the request then fails at once. pi's abort waits for
 * the run to end, which the calling handler is part of, so it is not awaited; it never throws.
 */
export function abortForBudget(ctx: PiContext, log: Logger): void {
  try {
    if (!ctx.isIdle()) {
      void Promise.resolve(ctx.abort()).catch((err) => log("budget abort failed", err));
    }
  } catch (err) {
    log("budget abort failed", err);
  }
}
