/**
 * Removing sessions with their whole history: one on request (`DELETE /api/sessions/:id`), and every offline
 * session idle for longer than the retention period (`LVMH_RETENTION_DAYS`).
 */
import type { App } from "./app.ts";
import { ConflictError, sessionNotFound } from "./errors.ts";

/** What removing a session touches. */
type Parts =
  & Pick<App, "sessions" | "approvals" | "images" | "workspaces">
  & Partial<Pick<App, "mergeRequests" | "budgets" | "usage">>;

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * Delete an offline session, its events, its approvals, the images its prompts carried and its working copy
 * record (the spawner removes the working copy volume with the session's storage).
 * @throws {ConflictError} while it is online; {NotFoundError} when unknown.
 */
export function deleteSession(app: Parts, id: string): void {
  app.sessions.remove(id);
  app.approvals.sessionDeleted(id);
  // Committed at once alone (SQLite); with replicas a failure on the shared database is only logged.
  app.images.sessionDeleted(id).catch((error) => {
    console.warn(`lvmh: could not delete the images of session ${id}: ${(error as Error).message}`);
  });
  // With replicas these two are rows of the shared database (the other replicas read them there).
  logRejection(app.workspaces.sessionDeleted(id), `the working copy record of session ${id}`);
  logRejection(app.mergeRequests?.sessionDeleted(id), `the merge request record of session ${id}`);
  app.budgets?.sessionDeleted(id);
  app.usage?.sessionDeleted(id);
}

/** A deletion that returned a promise (on the shared database): its failure is only logged, as images'. */
function logRejection(done: void | Promise<void>, what: string): void {
  done?.catch((error) => console.warn(`lvmh: could not delete ${what}: ${(error as Error).message}`));
}

/**
 * Discard a session: a spawned one's worker (if any) and storage first, then the session as `deleteSession`
 * does. The merge request itself stays on GitLab; lvmh's record of it goes.
 * @returns whether it was a spawned session (its storage was removed).
 * @throws {NotFoundError} when unknown; {ConflictError} while it is online or its worker runs;
 * {UnavailableError} when its storage could not be reached (nothing is deleted then).
 */
export async function discardSession(
  app: Parts & Pick<App, "spawner">,
  id: string,
): Promise<boolean> {
  if (!app.sessions.get(id)) throw sessionNotFound(id);
  if (app.sessions.isOnline(id)) {
    throw new ConflictError(`Session "${id}" is online: end it (or stop its container) first`);
  }
  const spawned = app.spawner.container(id) !== undefined;
  await app.spawner.discard(id);
  deleteSession(app, id);
  return spawned;
}

/**
 * Delete every offline session whose last event (or start, without events) is older than `days`; a stopped
 * spawned session is discarded (in the background: its storage goes too).
 * @returns the ids deleted
 */
export function pruneSessions(
  app: Parts & Partial<Pick<App, "spawner">>,
  days: number,
  now = Date.now(),
): string[] {
  const cutoff = now - days * DAY_MS;
  const old = app.sessions.list().filter((s) => !s.online && (s.lastEventAt ?? s.startedAt) < cutoff);
  for (const s of old) {
    // A stopped spawned session is discarded, its storage with it (else its volumes would outlive it);
    // one whose worker runs is left alone.
    if (app.spawner?.container(s.id)) {
      const spawner = app.spawner;
      discardSession({ ...app, spawner }, s.id).catch((error) => {
        console.warn(`lvmh: could not discard old session ${s.id}: ${(error as Error).message}`);
      });
      continue;
    }
    deleteSession(app, s.id);
  }
  return old.map((s) => s.id);
}

/** How often sessions past the retention period are looked for (also once at start). */
const PRUNE_INTERVAL_MS = 60 * 60 * 1000;

/**
 * Prune sessions past `days` now and every PRUNE_INTERVAL_MS, on the replica that leads the once-only jobs
 * (`isLeader`); nothing when there is no retention period. `prune()` runs a round at once (a replica that just
 * became the leader); `close()` stops the rounds.
 */
export function startPruning(
  app: Parameters<typeof pruneSessions>[0],
  days: number | null,
  isLeader: () => boolean,
): { prune(): void; close(): void } {
  const prune = () => {
    if (days === null || !isLeader()) return;
    try {
      const gone = pruneSessions(app, days);
      if (gone.length) console.log(`lvmh: deleted ${gone.length} session(s) idle for more than ${days} days`);
    } catch (error) {
      // Not fatal: the next round tries again.
      console.error(`lvmh: could not delete old sessions: ${(error as Error).message}`);
    }
  };
  prune();
  const timer = days === null ? undefined : setInterval(prune, PRUNE_INTERVAL_MS);
  return { prune, close: () => clearInterval(timer) };
}
