/**
 * The browser's copy of the daemon's session list: a map by id that a `session_list` frame replaces and a
 * `session_update` frame (changed rows, removed ids) patches, so a page with 3,000 sessions handles a change
 * in proportion to what changed, not to the whole list.
 */
import type { ServerFrame, SessionSummary } from "../lib/protocol.ts";

/** The frames that change the directory. */
export type SessionFrame = Extract<ServerFrame, { type: "session_list" | "session_update" }>;

/** An immutable snapshot of the directory; each frame makes a new one. */
export interface SessionDirectory {
  byId: ReadonlyMap<string, SessionSummary>;
  /** True once a `session_list` arrived on this page: before that, absence from `byId` means nothing. */
  loaded: boolean;
  /** Ids the last frame added or changed; null when it replaced the whole list. */
  changed: readonly string[] | null;
  /** Ids the last frame removed (for a `session_list`: those no longer in it). */
  removed: readonly string[];
}

/** The directory before any frame. */
export const EMPTY_DIRECTORY: SessionDirectory = {
  byId: new Map(),
  loaded: false,
  changed: null,
  removed: [],
};

/**
 * Apply one frame.
 * @param dir the current snapshot (not mutated)
 * @param frame a `session_list` (replaces everything) or `session_update` (patches)
 */
export function applySessionFrame(dir: SessionDirectory, frame: SessionFrame): SessionDirectory {
  if (frame.type === "session_list") {
    const byId = new Map(frame.sessions.map((s) => [s.id, s]));
    const removed = [...dir.byId.keys()].filter((id) => !byId.has(id));
    return { byId, loaded: true, changed: null, removed };
  }
  const byId = new Map(dir.byId);
  for (const s of frame.sessions) byId.set(s.id, s);
  const removed = frame.removed.filter((id) => byId.delete(id));
  return { byId, loaded: dir.loaded, changed: frame.sessions.map((s) => s.id), removed };
}
