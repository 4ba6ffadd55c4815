/**
 * Give memory back after a burst. An ingest burst leaves the V8 heap full of garbage (parsed frames, encoded
 * rows) that V8 only collects once the old generation reaches its next growth limit, which a quiet daemon may
 * never do: after the 50 × 2,000-event ingest benchmark the heap held ~70–170 MiB of which 17 MiB were live, and
 * the process stayed at ~290 MiB RSS (102 MiB after one full collection). Browsers do this with idle-time GC;
 * Deno has none, so the daemon does the same: when the RSS grew by more than `growthBytes` since the last full
 * collection and then, for one check, nothing was ingested and the heap stayed flat, it runs one. A
 * daemon that keeps working is left to V8's own heuristics, so the pause never lands in the middle of a stream.
 */
import v8 from "node:v8";
import vm from "node:vm";

/** RSS growth since the last full collection past which a quiet daemon collects. */
export const GC_GROWTH_BYTES = 48 * 1024 * 1024;
/** Growth during one check below which the daemon counts as quiet. */
export const GC_QUIET_BYTES = 1024 * 1024;
/**
 * How often the heap is looked at. Every 1 s with 4 MiB as the quiet bound, the collection after the ingest
 * benchmark came 1.3 s after its end, or past 3 s while the search index caught up (211–215 MiB 3 s later in 3
 * rounds of 9); every 250 ms with 1 MiB it came 0.5 s after the end in 12 rounds of 12.
 */
export const GC_CHECK_MS = 250;

/** V8's full collection, made reachable at run time (Node's documented `--expose-gc` + new context route). */
export function fullCollector(): (() => void) | null {
  try {
    v8.setFlagsFromString("--expose-gc");
    const gc = vm.runInNewContext("gc");
    return typeof gc === "function" ? gc as () => void : null;
  } catch {
    return null;
  }
}

/** One look at the process: V8's live-and-garbage heap, the resident set, and a count of work done so far. */
export interface MemoryReading {
  heapUsed: number;
  rss: number;
  /** Any counter that moves while the daemon works (events ingested): unchanged means nothing happened. */
  activity: number;
}

/** Decides, from successive readings, when a full collection is worth it; see the module comment. */
export class IdleCollector {
  #baseRss: number;
  #lastHeap: number;
  #lastActivity: number;
  #count = 0;
  #collect: () => void;
  #read: () => MemoryReading;
  #options: { growthBytes?: number; quietBytes?: number };

  constructor(
    collect: () => void,
    read: () => MemoryReading,
    options: { growthBytes?: number; quietBytes?: number } = {},
  ) {
    this.#collect = collect;
    this.#read = read;
    this.#options = options;
    const m = read();
    this.#baseRss = m.rss;
    this.#lastHeap = m.heapUsed;
    this.#lastActivity = m.activity;
  }

  /** Full collections run so far. */
  get collections(): number {
    return this.#count;
  }

  /**
   * Look once; collect when the RSS grew past the bound since the last collection (or the start), and since the
   * last look nothing was done and the heap did not grow. Growth is measured on the RSS, since that is what
   * should come back: the garbage of a burst is more than V8's heap figure shows (buffers outside it are freed
   * with their objects). Any activity defers it: a full collection with 3,000 sockets open stops the loop
   * ~75 ms, which must not land in the middle of a stream.
   */
  check(): boolean {
    const m = this.#read();
    const quiet = m.activity === this.#lastActivity &&
      m.heapUsed - this.#lastHeap < (this.#options.quietBytes ?? GC_QUIET_BYTES);
    this.#lastHeap = m.heapUsed;
    this.#lastActivity = m.activity;
    if (m.rss < this.#baseRss) this.#baseRss = m.rss; // memory went back by itself: the new floor
    if (!quiet || m.rss - this.#baseRss <= (this.#options.growthBytes ?? GC_GROWTH_BYTES)) return false;
    this.#collect();
    this.#count++;
    const after = this.#read();
    this.#baseRss = after.rss;
    this.#lastHeap = after.heapUsed;
    this.#lastActivity = after.activity;
    return true;
  }
}

/**
 * Check the daemon's memory every `GC_CHECK_MS` and collect after bursts, once `activity` (events ingested)
 * stood still for a check. A runtime without a reachable collector gets nothing (V8's own heuristics stay).
 * @returns stop, for shutdown.
 */
export function startIdleCollector(activity: () => number): () => void {
  const gc = fullCollector();
  if (!gc) return () => {};
  const collector = new IdleCollector(gc, () => {
    const { heapUsed, rss } = Deno.memoryUsage();
    return { heapUsed, rss, activity: activity() };
  });
  const timer = setInterval(() => collector.check(), GC_CHECK_MS);
  Deno.unrefTimer(timer);
  return () => clearInterval(timer);
}
