/**
 * Where a live delta's time goes inside the daemon, for bench/latency.ts (`SEGMENTS=1`): the bench's plugins
 * stamp each `message_update` with `sentAt` on the aligned clock (lib/wall_clock.ts) and its browsers read the
 * whole path; this places the daemon in between. With `LVMH_TRACE_DELTAS=<file>` every stamped delta gets two
 * figures, in ms after its stamp: when the daemon's handler got its frame, and when the handler was done (the
 * delta published, or queued behind its session's unstored events). A delta that reaches its handler late
 * waited for the event loop, so the loop's tasks are traced too (`traced`: frame handlers, commits, the list's
 * updates, index steps), and testing/delta_trace_read.ts names what each late delta waited behind. Written at
 * exit: one `sentAt arrived handled` line per delta, one `@ start end label` line per task (aligned clock, ms),
 * after an `origin <ms>` line that places the process's `performance.now()` on the aligned clock (what V8's
 * `--trace-gc-nvp` stamps its collections with comes close to it: testing/gc_trace.ts).
 * Unset, the trace is null and the frame path pays one null check.
 */
import { wallClock } from "./wall_clock.ts";

/** A delta being handled: its stamp and when its frame was read. */
export interface DeltaSpan {
  sentAt: number;
  arrived: number;
}

export interface DeltaTrace {
  /** The span of a frame that is a stamped delta, or null for any other frame. */
  arrived(frame: string): DeltaSpan | null;
  /** The handler is done with the delta. */
  handled(span: DeltaSpan): void;
  /** Run `work`, a task of the event loop, and note when it ran (tasks under 10 µs are not kept). */
  task<T>(label: string, work: () => T): T;
  /** Write what was traced to the file (at exit). */
  write(): void;
}

/** Lines kept at most (about 40 bytes each): a trace left on in a long run stops growing there. */
const MAX_LINES = 1_000_000;
/** Tasks shorter than this (ms) are not kept: most frames take less, and alone they hold no delta up. */
const MIN_TASK_MS = 0.01;

/** The trace `LVMH_TRACE_DELTAS` asks for, or null. */
export const deltaTrace: DeltaTrace | null = traceTo(Deno.env.get("LVMH_TRACE_DELTAS"));

/** `work()`, traced as a task of the event loop named `label` when the trace is on. */
export function traced<T>(label: string, work: () => T): T {
  return deltaTrace ? deltaTrace.task(label, work) : work();
}

/**
 * A trace written to `path`; null without a path.
 * @param options.atExit false: the caller writes it (default: at exit)
 * @param options.clock the aligned clock (tests drive their own)
 */
export function traceTo(
  path: string | undefined,
  options: { atExit?: boolean; clock?: { now(): number } } = {},
): DeltaTrace | null {
  if (!path) return null;
  const clock = options.clock ?? wallClock();
  const lines: string[] = [`origin ${(clock.now() - performance.now()).toFixed(3)}\n`];
  const trace: DeltaTrace = {
    arrived(frame) {
      const now = clock.now();
      if (!frame.includes('"message_update"')) return null;
      const sentAt = Number(/"sentAt":([0-9.]+)/.exec(frame)?.[1]);
      return Number.isFinite(sentAt) ? { sentAt, arrived: now - sentAt } : null;
    },
    handled(span) {
      if (lines.length >= MAX_LINES) return;
      lines.push(`${span.sentAt} ${span.arrived.toFixed(3)} ${(clock.now() - span.sentAt).toFixed(3)}\n`);
    },
    task(label, work) {
      const start = clock.now();
      try {
        return work();
      } finally {
        const end = clock.now();
        if (end - start >= MIN_TASK_MS && lines.length < MAX_LINES) {
          lines.push(`@ ${start.toFixed(3)} ${end.toFixed(3)} ${label}\n`);
        }
      }
    },
    write: () => Deno.writeTextFileSync(path, lines.join("")),
  };
  if (options.atExit ?? true) globalThis.addEventListener("unload", trace.write);
  return trace;
}
