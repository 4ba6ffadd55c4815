/**
 * The reads of one session's stored events a page at a time, behind the store's `eventRows` and `eventsJson`
 * (REST pages, the catch-up of sockets and streams, exports). Apart from lib/store.ts because it only reads:
 * it holds two prepared statements and nothing of the store's state.
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import type { EventRow } from "./event_codec.ts";

/** Which page of a session's events to read: above `after`, or (with `before`) the latest below it. */
export interface EventsPage {
  after: number;
  before?: number;
  limit: number;
}

/** The page reads of the events table of one database handle. */
export class EventPages {
  #selectAfter: StatementSync;
  #selectBefore: StatementSync;

  constructor(db: DatabaseSync) {
    this.#selectAfter = db.prepare(
      "SELECT sessionId, seq, ts, type, payload FROM events WHERE sessionId = ? AND seq > ? ORDER BY seq LIMIT ?",
    );
    this.#selectBefore = db.prepare(
      "SELECT sessionId, seq, ts, type, payload FROM events WHERE sessionId = ? AND seq < ? ORDER BY seq DESC LIMIT ?",
    );
  }

  /**
   * Stored event rows of a session, seq ascending: with `before`, the latest `limit` events below it;
   * otherwise the first `limit` above `after`.
   */
  rows(id: string, query: EventsPage): EventRow[] {
    return query.before !== undefined
      ? (this.#selectBefore.all(id, query.before, query.limit) as unknown as EventRow[]).reverse()
      : this.#selectAfter.all(id, query.after, query.limit) as unknown as EventRow[];
  }
}
