/**
 * The rows of `events` as the search index reads them, both when it indexes them and when a search reads
 * the ones past the index itself; and the statement cache both ways share (one connection, the store's).
 */
import type { StatementSync } from "node:sqlite";

/** The event-row fields the index reads. */
export interface IndexedEvent {
  sessionId: string;
  seq: number;
  ts: number;
  type: string;
}

/** An event row with its rowid (the index's row id) and its payload (the text is made from it). */
export type EventRow = IndexedEvent & { rowid: number; payload: string };

/** A prepared statement for `sql`, made once per connection. */
export type Prepared = (sql: string) => StatementSync;
