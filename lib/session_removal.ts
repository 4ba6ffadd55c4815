/**
 * Removing sessions with their whole history: one on request (`DELETE /api/sessions/:id`), and every offline
 * session idle for longer than the retention period (`LVMH_RETENTION_DAYS`).
 */
import type { App } from "./app.ts";

/** What removing a session touches. */
type Parts =
  & Pick<App, "sessions" | "approvals" | "images" | "workspaces">
  & Partial<Pick<App, "mergeRequests">>;

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * Delete an offline session, its events, its approvals, the images its prompts carried and its working copy
 * record (the spawner removes the working copy volume with the session's storage).
 * @throws {ConflictError} while it is online; {NotFoundError} when unknown.
 */
export function deleteSession(app: Parts, id: string): void {
  app.sessions.remove(id);
  app.approvals.sessionDeleted(id);
  app.images.sessionDeleted(id);
  app.workspaces.sessionDeleted(id);
  app.mergeRequests?.sessionDeleted(id);
}

/**
 * Delete every offline session whose last event (or start, without events) is older than `days`.
 * @returns the ids deleted
 */
export function pruneSessions(app: Parts, days: number, now = Date.now()): string[] {
  const cutoff = now - days * DAY_MS;
  const old = app.sessions.list().filter((s) => !s.online && (s.lastEventAt ?? s.startedAt) < cutoff);
  for (const s of old) deleteSession(app, s.id);
  return old.map((s) => s.id);
}
