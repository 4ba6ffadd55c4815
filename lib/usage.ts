/**
 * Usage reports (`GET /api/usage`, the `/usage` page): runs, tokens and cost, grouped by UTC day, session,
 * repository, person (the token name that prompted the run; `terminal` for prompts typed into pi) or model.
 * Counted like budgets: each assistant message's usage, or a run's `agent_end` usage from plugins that predate
 * it. This module holds what a report is and how one is grouped and asked for, with no state of its own; the
 * daemon reads runs from `UsageRuns` (`lib/usage_runs.ts`), one row per run kept beside the log, so a report
 * reads a few thousand rows by an index instead of every event of the range (200,000 events: ~480 ms → a few
 * ms; bench/usage.ts). `runsIn` is the same count straight from the log, kept as the reference the table is
 * tested against.
 */
import type { DatabaseSync } from "node:sqlite";
import type { SessionRecord } from "./protocol.ts";
import { utcDay } from "./budget_math.ts";
import { addUsage } from "./usage_count.ts";

/** How usage can be grouped. */
export const USAGE_BY = ["day", "session", "repo", "person", "model"] as const;
export type UsageBy = (typeof USAGE_BY)[number];

/** One group of a report. */
export interface UsageRow {
  key: string;
  runs: number;
  inputTokens: number;
  outputTokens: number;
  cost: number;
}

/** One run, as the log tells it: when it started, who asked, on which model, and what it cost. */
export interface UsageRun {
  sessionId: string;
  repo: string | null;
  day: string;
  person: string;
  model: string;
  inputTokens: number;
  outputTokens: number;
  cost: number;
}

interface EventRow {
  sessionId: string;
  ts: number;
  type: string;
  payload: string;
}

/** The longest range one report reads (the log is scanned for it). */
export const MAX_RANGE_DAYS = 366;

/**
 * Every run that started in `[from, to)` (ms), in start order.
 * @param sessions the session rows (for repo and model when a message does not say)
 */
export function runsIn(
  db: DatabaseSync,
  sessions: readonly SessionRecord[],
  from: number,
  to: number,
): UsageRun[] {
  const info = new Map(sessions.map((s) => [s.id, s]));
  const rows = db.prepare(
    `SELECT sessionId, ts, type, payload FROM events WHERE ts >= ? AND ts < ?
      AND type IN ('message_end','agent_start','agent_end') ORDER BY sessionId, seq`,
  ).all(from, to) as unknown as EventRow[];
  const runs: UsageRun[] = [];
  let current: (UsageRun & { counted: boolean }) | null = null;
  let session = "";
  const finish = () => {
    if (current) runs.push(strip(current));
    current = null;
  };
  for (const r of rows) {
    if (r.sessionId !== session) {
      finish();
      session = r.sessionId;
    }
    const s = info.get(r.sessionId);
    if (r.type === "agent_start") {
      finish();
      current = {
        sessionId: r.sessionId,
        repo: s?.repo ?? null,
        day: utcDay(r.ts),
        person: "terminal",
        model: s?.model ?? "unknown",
        inputTokens: 0,
        outputTokens: 0,
        cost: 0,
        counted: false,
      };
      continue;
    }
    if (!current) continue; // a run that started before the range is not this range's
    const run: UsageRun & { counted: boolean } = current;
    let p: Record<string, unknown>;
    try {
      p = JSON.parse(r.payload);
    } catch {
      continue;
    }
    const m = p.message as { role?: string; usage?: Record<string, unknown>; model?: unknown } | undefined;
    if (r.type === "message_end" && m?.role === "user") {
      const by = (p.from as { by?: unknown } | undefined)?.by;
      if (run.person === "terminal" && typeof by === "string" && by) run.person = by;
    } else if (r.type === "message_end" && m?.role === "assistant" && m.usage) {
      if (!run.counted && typeof m.model === "string" && m.model) run.model = m.model;
      run.counted = true;
      addUsage(run, m.usage);
    } else if (r.type === "agent_end") {
      if (!run.counted) addUsage(run, p.usage as Record<string, unknown> | undefined);
      finish();
    }
  }
  finish();
  return runs;
}

/** Runs grouped by `by`, most expensive first (by day: oldest first). */
export function groupRuns(runs: readonly UsageRun[], by: UsageBy): UsageRow[] {
  const groups = new Map<string, UsageRow>();
  for (const r of runs) {
    const key = keyOf(r, by);
    const g = groups.get(key) ?? { key, runs: 0, inputTokens: 0, outputTokens: 0, cost: 0 };
    g.runs++;
    g.inputTokens += r.inputTokens;
    g.outputTokens += r.outputTokens;
    g.cost += r.cost;
    groups.set(key, g);
  }
  const rows = [...groups.values()];
  return by === "day"
    ? rows.sort((a, b) => (a.key < b.key ? -1 : 1))
    : rows.sort((a, b) => b.cost - a.cost || b.inputTokens + b.outputTokens - a.inputTokens - a.outputTokens);
}

/** The group key of a run. */
export function keyOf(r: UsageRun, by: UsageBy): string {
  switch (by) {
    case "day":
      return r.day;
    case "session":
      return r.sessionId;
    case "repo":
      return r.repo ?? "(terminal)";
    case "person":
      return r.person;
    case "model":
      return r.model;
  }
}

function strip(r: UsageRun & { counted?: boolean }): UsageRun {
  const { counted: _c, ...run } = r;
  return run;
}

/** A report's range: `from`/`to` as `YYYY-MM-DD` (UTC days, `to` included) or ms; by default the last 30 days. */
export interface UsageRange {
  from: number;
  to: number;
}

const DAY_MS = 86_400_000;

/**
 * Read `from`, `to` and `by` of a usage query.
 * @throws {Error} with a message for the caller (the route answers 400).
 */
export function parseUsageQuery(
  params: URLSearchParams,
  now = Date.now(),
): UsageRange & { by: UsageBy } {
  const by = (params.get("by") ?? "day") as UsageBy;
  if (!USAGE_BY.includes(by)) throw new Error(`by must be one of ${USAGE_BY.join(", ")}`);
  const today = Date.parse(`${utcDay(now)}T00:00:00Z`);
  const at = (name: string, fallback: number, end: boolean): number => {
    const v = params.get(name);
    if (v === null || v === "") return fallback;
    if (/^\d{4}-\d{2}-\d{2}$/.test(v)) {
      const t = Date.parse(`${v}T00:00:00Z`);
      if (Number.isFinite(t)) return end ? t + DAY_MS : t;
    } else if (/^\d{1,15}$/.test(v)) return Number(v);
    throw new Error(`${name} must be a day (YYYY-MM-DD) or milliseconds`);
  };
  const to = at("to", today + DAY_MS, true);
  const from = at("from", to - 30 * DAY_MS, false);
  if (from >= to) throw new Error("from must be before to");
  if (to - from > MAX_RANGE_DAYS * DAY_MS) throw new Error(`at most ${MAX_RANGE_DAYS} days at once`);
  return { from, to, by };
}
