/**
 * How a run's row is counted from its session's events, with no storage: a run starts at `agent_start`, takes
 * the person from the first prompt that names one and the model from the first assistant message with usage,
 * adds each such message's usage (or the `agent_end` usage of plugins that predate it) and ends at
 * `agent_end`. Shared by the log's reference count (`runsIn`, lib/usage.ts) and the table (lib/usage_runs.ts),
 * so both add tokens and cost the same way.
 */
import { spentOf } from "./budget_math.ts";

/** One row of `usage_runs`, as read and written (its `seenSeq` is kept by the table alone). */
export interface RunRow {
  sessionId: string;
  startSeq: number;
  startedAt: number;
  person: string;
  model: string | null;
  inputTokens: number;
  outputTokens: number;
  cost: number;
  counted: number;
  open: number;
}

/**
 * A row's values in the `usage_runs` table's column order, then how far its session was counted (`seenSeq`):
 * the parameters of both writers' statements (lib/usage_runs.ts, lib/storage/sqlite_usage_run_log.ts).
 */
export function runParams(c: RunRow, seenSeq: number): [string, ...(string | number | null)[]] {
  return [
    c.sessionId,
    c.startSeq,
    c.startedAt,
    c.person,
    c.model,
    c.inputTokens,
    c.outputTokens,
    c.cost,
    c.counted,
    c.open,
    seenSeq,
  ];
}

/** One event, as far as counting runs goes. */
export interface RunEvent {
  seq: number;
  ts: number;
  type: string;
  payload: Record<string, unknown>;
}

/**
 * Move a session's runs on by `events` (in seq order), starting from its run not ended yet (`run`, changed in
 * place; null: none). Each row that changed is given to `touch`.
 * @returns the session's run not ended after the events (null: none)
 */
export function advanceRuns(
  sessionId: string,
  run: RunRow | null,
  events: readonly RunEvent[],
  touch: (r: RunRow) => void,
): RunRow | null {
  for (const e of events) {
    if (e.type === "agent_start") {
      if (run) touch({ ...run, open: 0 });
      run = {
        sessionId,
        startSeq: e.seq,
        startedAt: e.ts,
        person: "terminal",
        model: null,
        inputTokens: 0,
        outputTokens: 0,
        cost: 0,
        counted: 0,
        open: 1,
      };
      touch(run);
      continue;
    }
    if (!run) continue; // events before the session's first run
    const p = e.payload;
    const m = p.message as { role?: string; usage?: Record<string, unknown>; model?: unknown } | undefined;
    if (e.type === "message_end" && m?.role === "user") {
      const by = (p.from as { by?: unknown } | undefined)?.by;
      if (run.person !== "terminal" || typeof by !== "string" || !by) continue;
      run.person = by;
    } else if (e.type === "message_end" && m?.role === "assistant" && m.usage) {
      if (!run.counted && typeof m.model === "string" && m.model) run.model = m.model;
      run.counted = 1;
      addUsage(run, m.usage);
    } else if (e.type === "agent_end") {
      if (!run.counted) addUsage(run, p.usage as Record<string, unknown> | undefined);
      run.open = 0;
      touch(run);
      run = null;
      continue;
    } else continue;
    touch(run);
  }
  return run;
}

/** Add one usage record (a message's or a run's) to a run's tokens and cost; what is not a number adds 0. */
export function addUsage(
  run: { inputTokens: number; outputTokens: number; cost: number },
  u: Record<string, unknown> | undefined,
): void {
  const s = spentOf(u);
  const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) && v > 0 ? v : 0);
  run.inputTokens += num(u?.inputTokens);
  run.outputTokens += num(u?.outputTokens);
  run.cost += s.cost;
}
