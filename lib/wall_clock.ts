/**
 * Clocks that stamps of different processes on one machine can be compared on: the benches stamp a delta in
 * the plugin process and read it in a browser process, and the daemon's delta trace (lib/delta_trace.ts)
 * places it in between.
 */

/** Wall clock in ms with sub-ms resolution, comparable across processes on one machine. */
export function nowMs(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * A clock for comparing stamps across processes on this machine: `performance.timeOrigin + performance.now()`
 * aligned to the system wall clock (the one `Date.now()` reads, shared by every process) to within a few µs.
 * Each process's timeOrigin is fixed at its start and may sit off the wall clock by a fraction of a ms, which
 * matters for a 2 ms goal: the offset is taken at the instant `Date.now()` ticks to the next ms, the best of
 * several tries (a try that was preempted only reads too early, so the largest offset is the closest).
 */
export function wallClock(tries = 7): { now(): number; offsetMs: number } {
  let offset = -Infinity;
  for (let i = 0; i < tries; i++) {
    const start = Date.now();
    let tick = start;
    while (tick === start) tick = Date.now();
    offset = Math.max(offset, tick - nowMs());
  }
  return { now: () => nowMs() + offset, offsetMs: offset };
}
