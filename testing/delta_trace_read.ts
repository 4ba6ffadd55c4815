/**
 * Reading a delta trace (lib/delta_trace.ts) for bench/latency.ts: the deltas' segments, and what the late ones
 * waited behind. A delta that reached the daemon's handler late waited for the event loop; the loop's tasks that
 * ran between its stamp and that moment are what held it. One delta may wait behind several tasks, and one
 * that overlaps none waited for work the trace does not see (a GC, the runtime's own I/O, the OS scheduler).
 */
import { pct } from "./proc.ts";

/** A traced delta: its stamp on the aligned clock, and ms after it to its handler getting it and being done. */
export interface TracedDelta {
  sentAt: number;
  arrived: number;
  handled: number;
}

/** A task of the daemon's event loop, on the aligned clock (ms). */
export interface TracedTask {
  start: number;
  end: number;
  label: string;
}

export interface DeltaTraceFile {
  /** Where the daemon's `performance.now()` was 0, on the aligned clock (NaN in a trace without the line). */
  origin: number;
  deltas: TracedDelta[];
  /** In the order they ran. */
  tasks: TracedTask[];
}

/** p50 and p99 of "in" (the handler got the frame) and "handled", in ms after the stamp. */
export interface Segments {
  in50: number;
  in99: number;
  handled50: number;
  handled99: number;
}

/** What the deltas that reached their handler late waited behind. */
export interface Waits {
  /** Deltas that reached their handler later than the bound… */
  late: number;
  /** …of this many. */
  of: number;
  /** Late deltas that waited behind a task of each label (one delta may count under several). */
  behind: Record<string, number>;
  /** Late deltas that overlapped no traced task. */
  untraced: number;
}

/** Parse the text of a trace. */
export function parseTrace(text: string): DeltaTraceFile {
  const trace: DeltaTraceFile = { origin: NaN, deltas: [], tasks: [] };
  for (const line of text.split("\n")) {
    if (line.startsWith("origin ")) trace.origin = Number(line.slice(7));
    else if (line.startsWith("@ ")) {
      const [start, end, ...label] = line.slice(2).split(" ");
      trace.tasks.push({ start: Number(start), end: Number(end), label: label.join(" ") });
    } else if (line) {
      const [sentAt, arrived, handled] = line.split(" ").map(Number);
      trace.deltas.push({ sentAt, arrived, handled });
    }
  }
  trace.tasks.sort((a, b) => a.start - b.start);
  return trace;
}

/** The deltas stamped within `window` (the browsers' own, on the same clock), else all. */
function within(deltas: TracedDelta[], window?: [number, number]): TracedDelta[] {
  return window ? deltas.filter((d) => d.sentAt >= window[0] && d.sentAt <= window[1]) : deltas;
}

/** The segments of the deltas stamped within `window`. */
export function segments(deltas: TracedDelta[], window?: [number, number]): Segments {
  const kept = within(deltas, window);
  const arrived = kept.map((d) => d.arrived).sort((a, b) => a - b);
  const handled = kept.map((d) => d.handled).sort((a, b) => a - b);
  return {
    in50: pct(arrived, 0.5),
    in99: pct(arrived, 0.99),
    handled50: pct(handled, 0.5),
    handled99: pct(handled, 0.99),
  };
}

/** What the deltas stamped within `window` that reached their handler later than `lateMs` waited behind. */
export function waits(trace: DeltaTraceFile, lateMs: number, window?: [number, number]): Waits {
  const kept = within(trace.deltas, window);
  const result: Waits = { late: 0, of: kept.length, behind: {}, untraced: 0 };
  const { tasks } = trace;
  const longest = tasks.reduce((max, t) => Math.max(max, t.end - t.start), 0);
  for (const d of kept) {
    if (d.arrived <= lateMs) continue;
    result.late++;
    const from = d.sentAt, to = d.sentAt + d.arrived;
    // The first task that could still run at `from`: none starts more than the longest task before it.
    let i = firstStartingAfter(tasks, from - longest);
    const labels = new Set<string>();
    for (; i < tasks.length && tasks[i].start < to; i++) {
      if (tasks[i].end > from) labels.add(tasks[i].label);
    }
    for (const label of labels) result.behind[label] = (result.behind[label] ?? 0) + 1;
    if (!labels.size) result.untraced++;
  }
  return result;
}

/** Several rounds' waits as one. */
export function addWaits(all: Waits[]): Waits {
  const sum: Waits = { late: 0, of: 0, behind: {}, untraced: 0 };
  for (const w of all) {
    sum.late += w.late;
    sum.of += w.of;
    sum.untraced += w.untraced;
    for (const [label, n] of Object.entries(w.behind)) sum.behind[label] = (sum.behind[label] ?? 0) + n;
  }
  return sum;
}

/** Index of the first task starting at or after `at` (tasks sorted by start). */
function firstStartingAfter(tasks: TracedTask[], at: number): number {
  let lo = 0, hi = tasks.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (tasks[mid].start < at) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
