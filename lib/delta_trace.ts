/**
 * Where a live delta's time goes inside the daemon, for bench/latency.ts (`SEGMENTS=1`): the bench's plugins
 * stamp each `message_update` with `sentAt` on the aligned clock (lib/wall_clock.ts) and its browsers read the
 * whole path; this places the daemon in between. With `LVMH_TRACE_DELTAS=<file>` every stamped delta gets two
 * figures, in ms after its stamp: when the daemon's handler got its frame, and when the handler was done (the
 * delta published, or queued behind its session's unstored events). They are written at exit, one
 * `sentAt arrived handled` line per delta. Unset, the trace is null and the frame path pays one null check.
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
  /** Write what was traced to the file (at exit). */
  write(): void;
}

/** Lines kept at most (about 40 bytes each): a trace left on in a long run stops growing there. */
const MAX_LINES = 1_000_000;

/** The trace `LVMH_TRACE_DELTAS` asks for, or null. */
export const deltaTrace: DeltaTrace | null = traceTo(Deno.env.get("LVMH_TRACE_DELTAS"));

/** A trace written to `path` at exit (unless `atExit` is false: the caller writes it); null without a path. */
export function traceTo(path: string | undefined, atExit = true): DeltaTrace | null {
  if (!path) return null;
  const clock = wallClock();
  const lines: string[] = [];
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
    write: () => Deno.writeTextFileSync(path, lines.join("")),
  };
  if (atExit) globalThis.addEventListener("unload", trace.write);
  return trace;
}
