/**
 * The shape of the approvals owner's cache of pending approvals (per session, by id) and the comparisons it
 * makes when it re-reads the log. Pure functions: the cache itself is lib/approvals.ts's alone, which builds,
 * replaces and announces it.
 */
import type { ApprovalRecord } from "./storage/approval_log.ts";

/** Pending approvals per session, by id. */
export type PendingBySession = Map<string, Map<string, ApprovalRecord>>;

/** The pending approvals grouped by session. */
export function pendingBySession(records: Iterable<ApprovalRecord>): PendingBySession {
  const bySession: PendingBySession = new Map();
  for (const a of records) {
    let ids = bySession.get(a.sessionId);
    if (!ids) bySession.set(a.sessionId, ids = new Map());
    ids.set(a.id, a);
  }
  return bySession;
}

/** The sessions whose pending ids differ between `was` and `now`. */
export function changedSessions(was: PendingBySession, now: PendingBySession): string[] {
  return [...new Set([...was.keys(), ...now.keys()])].filter((id) => !sameIds(was.get(id), now.get(id)));
}

/** Every pending approval, oldest first (the logs' order: by creation time, then by id). */
export function oldestFirst(bySession: PendingBySession): ApprovalRecord[] {
  return [...bySession.values()].flatMap((ids) => [...ids.values()]).sort((a, b) =>
    a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
  );
}

/** Whether two maps hold the same ids (a missing map holds none). */
export function sameIds(a: Map<string, unknown> | undefined, b: Map<string, unknown> | undefined): boolean {
  if ((a?.size ?? 0) !== (b?.size ?? 0)) return false;
  for (const id of a?.keys() ?? []) if (!b!.has(id)) return false;
  return true;
}
