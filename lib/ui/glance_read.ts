/**
 * Glances for the server render, read from the store: the first events (for the first prompt) and the
 * latest ones (for the last line, the running tool and recent cost) of each session, two indexed reads each.
 * Cost counts the runs among the events read; the daemon carrying `cost` in `SessionSummary` would make it
 * exact for long sessions.
 */
import type { SessionSummary, StoredEvent } from "../protocol.ts";
import { applyGlance, EMPTY_GLANCE, type Glance } from "./glance.ts";
import { asUiEvents } from "./wire.ts";

/** Reads a page of a session's events, as `Store.events` does. */
export type ReadEvents = (id: string, q: { after: number; before?: number; limit: number }) => StoredEvent[];

/** Events read from the start of a session to find its first prompt. */
const HEAD = 24;
/** Latest events read for what it does now. */
const TAIL = 60;

/**
 * The glance of one session from its stored events.
 * @param read the store's event reader
 * @param s the session's summary (its `lastSeq` bounds the reads)
 */
export function readGlance(read: ReadEvents, s: Pick<SessionSummary, "id" | "lastSeq">): Glance {
  const tail = asUiEvents(read(s.id, { after: 0, before: s.lastSeq + 1, limit: TAIL }));
  const firstTail = tail[0]?.seq ?? 1;
  const head = firstTail > 1 ? asUiEvents(read(s.id, { after: 0, limit: HEAD })) : [];
  const g = applyGlance(EMPTY_GLANCE, head.filter((e) => e.seq < firstTail));
  // The head only contributes the first prompt; costs and lines come from the tail, applied after it.
  return applyGlance({ ...EMPTY_GLANCE, firstPrompt: g.firstPrompt, seq: firstTail - 1 }, tail);
}

/**
 * Glances of the first `n` sessions, by id.
 * @param read the store's event reader
 * @param sessions sessions in the order shown
 */
export function readGlances(
  read: ReadEvents,
  sessions: readonly SessionSummary[],
  n: number,
): Record<string, Glance> {
  const out: Record<string, Glance> = {};
  for (const s of sessions.slice(0, n)) if (s.lastSeq > 0) out[s.id] = readGlance(read, s);
  return out;
}
