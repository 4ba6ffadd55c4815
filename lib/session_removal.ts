/**
 * Removing sessions with their whole history: one on request (`DELETE /api/sessions/:id`), and every offline
 * session idle for longer than the retention period (`LVMH_RETENTION_DAYS`).
 */
import type { AppCore } from "./app.ts";

export type Removal = "deleted" | "online" | "missing";
/** What removing a session touches. */
type Parts = Pick<AppCore, "store" | "ingest" | "live" | "onSessionsChanged">;

const DAY_MS = 24 * 60 * 60 * 1000;

/** Delete an offline session and its events; an online one is left alone. */
export function deleteSession(app: Parts, id: string): Removal {
  // A live plugin would only bring the session back, with a history that no longer starts at seq 1.
  if (app.live.isOnline(id)) return "online";
  app.ingest.flush(); // nothing of it may still wait for the disk
  if (!app.store.deleteSession(id)) return "missing";
  app.ingest.forget(id);
  app.onSessionsChanged();
  return "deleted";
}

/**
 * Delete every offline session whose last event (or start, without events) is older than `days`.
 * @returns the ids deleted
 */
export function pruneSessions(app: Parts, days: number, now = Date.now()): string[] {
  const cutoff = now - days * DAY_MS;
  return app.store.listSessions()
    .filter((s) => !s.online && (s.lastEventAt ?? s.startedAt) < cutoff)
    .map((s) => s.id)
    .filter((id) => deleteSession(app, id) === "deleted");
}
