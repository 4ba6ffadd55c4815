/**
 * Idle stop (`LVMH_IDLE_STOP_MINUTES`): a spawned session whose worker runs but that has had no run, no
 * pending approval and no activity for that long is stopped. Its storage stays, so it is resumed as it was;
 * a worker left alone overnight costs nothing until then.
 *
 * Every replica checks every worker (their states are shared): idleness is judged from the shared log, so
 * replicas agree on it, and the stop is a compare-and-set on the state read: one replica stops the worker, the
 * others' stops find it moved (`NotFoundError`, as for a worker gone), which is quiet.
 */
import type { SessionSummary } from "../protocol.ts";
import type { Spawner } from "../spawner.ts";
import { NotFoundError } from "../errors.ts";

/** How often idle sessions are looked for, at most (a shorter idle time checks more often). */
const CHECK_MS = 30_000;

export interface IdleStopDeps {
  /** Minutes of idleness before a stop; null never stops. */
  minutes: number | null;
  spawner: Pick<Spawner, "stopSession" | "container">;
  sessions: { list(): SessionSummary[] };
  now?: () => number;
}

/** The sessions idle for longer than `minutes` at `now`. */
export function idleSessions(deps: IdleStopDeps, now = (deps.now ?? Date.now)()): string[] {
  if (deps.minutes === null) return [];
  const limit = deps.minutes * 60_000;
  const idle: string[] = [];
  for (const s of deps.sessions.list()) {
    if (s.container !== "running" || s.state === "running" || s.waiting > 0) continue;
    // A worker resumed a minute ago is not idle, however old the session's last event.
    const since = Math.max(
      s.lastActivityAt ?? 0,
      s.lastEventAt ?? 0,
      s.startedAt,
      deps.spawner.container(s.id)?.updatedAt ?? 0,
    );
    if (now - since >= limit) idle.push(s.id);
  }
  return idle;
}

/** Check now and then; `check()` runs one round (tests). Never throws: a failed stop is retried next round. */
export function startIdleStop(deps: IdleStopDeps): { check(): Promise<string[]>; close(): void } {
  const check = async () => {
    const stopped: string[] = [];
    for (const id of idleSessions(deps)) {
      try {
        await deps.spawner.stopSession(id);
        stopped.push(id);
      } catch (error) {
        if (error instanceof NotFoundError) continue;
        console.warn(`lvmh: idle stop of ${id} failed: ${(error as Error).message}`);
      }
    }
    return stopped;
  };
  if (deps.minutes === null) return { check, close() {} };
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    check().finally(() => running = false);
  }, Math.min(CHECK_MS, Math.max(1000, deps.minutes * 60_000 / 4)));
  Deno.unrefTimer(timer);
  return { check, close: () => clearInterval(timer) };
}
