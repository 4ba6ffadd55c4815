/**
 * "Since you last looked": each browser remembers, per session, the last seq it showed (localStorage), and a
 * returning visit summarises what happened after it: runs finished, tools run, files touched, cost.
 */
import type { UiEvent } from "./types.ts";
import { type LocalStore, localStore as store } from "./local_store.ts";

const PREFIX = "lvmh.seen.";

/** The last seq this browser showed of a session, or null when it never showed it. */
export function readLastSeen(id: string, s: LocalStore | null = store()): number | null {
  const n = Number(s?.getItem(PREFIX + id) ?? NaN);
  return Number.isInteger(n) && n >= 0 ? n : null;
}

/** Remember that this browser showed a session up to `seq` (never moves back). */
export function writeLastSeen(id: string, seq: number, s: LocalStore | null = store()): void {
  const before = readLastSeen(id, s);
  if (before !== null && before >= seq) return;
  try {
    s?.setItem(PREFIX + id, String(seq));
  } catch { /* storage full: the card is a convenience */ }
}

/** What happened after a seq. */
export interface SinceSummary {
  /** Runs that ended (`agent_end`). */
  runs: number;
  /** Tool calls started. */
  tools: number;
  /** Paths of `edit` and `write` calls, in first-touch order. */
  files: string[];
  cost: number;
  /** Persisted events after the seq. */
  events: number;
}

/**
 * Summarise the events after `seq`.
 * @param events persisted events held, ascending
 */
export function summariseSince(events: readonly UiEvent[], seq: number): SinceSummary {
  const out: SinceSummary = { runs: 0, tools: 0, files: [], cost: 0, events: 0 };
  const files = new Set<string>();
  for (const e of events) {
    if (e.type === "message_update" || e.seq <= seq) continue;
    out.events++;
    if (e.type === "agent_end") {
      out.runs++;
      out.cost += e.usage.totalCost ?? 0;
    } else if (e.type === "tool_execution_start") {
      out.tools++;
      const a = e.args && typeof e.args === "object" ? e.args as Record<string, unknown> : {};
      const path = a.path ?? a.file_path;
      if ((e.toolName === "edit" || e.toolName === "write") && typeof path === "string") files.add(path);
    }
  }
  out.files = [...files];
  return out;
}
