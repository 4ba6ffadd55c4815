/**
 * The page's view of presence: who has each session open (typing or not) and who holds its wheel, kept from
 * the daemon's `presence` frames.
 */
import type { PresenceWatcher, ServerFrame, Wheel } from "../lib/protocol.ts";

/** One session's presence. */
export interface SessionPresence {
  watchers: PresenceWatcher[];
  wheel?: Wheel;
}

/** Presence by session id. */
export type PresenceMap = ReadonlyMap<string, SessionPresence>;

/** The map after one `presence` frame (a session nobody watches or steers any more is dropped). */
export function applyPresence(
  map: PresenceMap,
  frame: Extract<ServerFrame, { type: "presence" }>,
): PresenceMap {
  const next = new Map(map);
  if (frame.watchers.length === 0 && !frame.wheel) next.delete(frame.sessionId);
  else {next.set(frame.sessionId, {
      watchers: frame.watchers,
      ...(frame.wheel ? { wheel: frame.wheel } : {}),
    });}
  return next;
}

/** "alice, bob (typing…)" — the others first named, then who types. */
export function watchersText(watchers: readonly PresenceWatcher[]): string {
  return watchers.map((w) => (w.typing ? `${w.name} (typing…)` : w.name)).join(", ");
}

/** "alice is steering until 14:05" in the reader's own time. */
export function wheelText(wheel: Wheel, now: number): string | null {
  if (wheel.until <= now) return null;
  const t = new Date(wheel.until);
  const hh = String(t.getHours()).padStart(2, "0");
  const mm = String(t.getMinutes()).padStart(2, "0");
  return `${wheel.holder} is steering until ${hh}:${mm}`;
}
