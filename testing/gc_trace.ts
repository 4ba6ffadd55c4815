/**
 * Reading what V8 prints with `--trace-gc-nvp` (one `[pid:isolate:0]  <ms> ms: GC: {…}` line per collection),
 * for bench/latency.ts (`SEGMENTS=1`): how long the daemon's main thread stood still for its collections in the
 * browsers' window. A pause holds every frame that arrives during it, and it runs inside no task the delta trace
 * (lib/delta_trace.ts) sees, so it is otherwise counted as "no traced task".
 */

/** One collection of the main isolate: when it ended (ms after the isolate's start) and how long it paused. */
export interface GcPause {
  at: number;
  pause: number;
  /** V8's short name: `s` scavenge, `mms` minor mark-sweep, `mc` mark-compact (full). */
  kind: string;
}

/** The pauses of a window. */
export interface GcSummary {
  collections: number;
  /** Of them, full (mark-compact) collections. */
  full: number;
  /** ms paused in all. */
  total: number;
  longest: number;
}

const LINE = /^\[\d+:(0x[0-9a-f]+)(?::\d+)?\]\s+([\d.]+) ms: GC: (\{.*\})\s*$/;

/**
 * The collections of the process's main isolate in `output` (everything else it printed is skipped). Workers
 * are isolates of their own; the main one is the isolate with the most collections, since every frame's
 * garbage is its own.
 */
export function parseGcPauses(output: string): GcPause[] {
  const byIsolate = new Map<string, GcPause[]>();
  for (const line of output.split("\n")) {
    const m = LINE.exec(line);
    const nvp = m && parsed(m[3]);
    if (!nvp) continue;
    const list = byIsolate.get(m[1]) ?? [];
    list.push({ at: Number(m[2]), pause: nvp.pause, kind: nvp.gc });
    byIsolate.set(m[1], list);
  }
  return [...byIsolate.values()].reduce((most, l) => l.length > most.length ? l : most, [] as GcPause[]);
}

/**
 * A line's JSON, or null: the isolates print at once, so now and then one line is cut by another's (that
 * collection is then missed).
 */
function parsed(json: string): { pause: number; gc: string } | null {
  try {
    const nvp = JSON.parse(json);
    return typeof nvp.pause === "number" && typeof nvp.gc === "string" ? nvp : null;
  } catch {
    return null;
  }
}

/** The pauses that ended within [from, to] (ms after the isolate's start). */
export function gcWithin(pauses: readonly GcPause[], from: number, to: number): GcSummary {
  const kept = pauses.filter((p) => p.at >= from && p.at <= to);
  return {
    collections: kept.length,
    full: kept.filter((p) => p.kind === "mc").length,
    total: kept.reduce((sum, p) => sum + p.pause, 0),
    longest: kept.reduce((max, p) => Math.max(max, p.pause), 0),
  };
}
