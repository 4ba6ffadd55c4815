/**
 * Live fan-out across replicas: how a replica that does not hold a session learns of that session's new
 * events, in seq order, without gaps or repeats, so its browser sockets and SSE streams can show them live.
 * Two implementations (SQLite in process, PostgreSQL with LISTEN/NOTIFY) pass one contract
 * (tests/process/event_feed_contract_test.ts).
 *
 * The table is the truth, the hint only says where to look. The appender (the session's holder) announces each
 * commit after it (never inside the append transaction: on PostgreSQL a NOTIFY takes a global lock at commit);
 * a follower keeps a cursor per session and reads `seq > cursor` from the events table in pages, so a hint's
 * payload is never trusted for the events themselves (PostgreSQL caps it under 8000 bytes, and drops hints
 * sent while a listener reconnects). A sweep of the sessions' counter rows every `FEED_SWEEP_MS` finds what a
 * lost or never-sent hint missed; the event log numbers a session's events from its counter row inside the
 * insert transaction, so commits are in seq order and a cursor never skips a row.
 */
import type { EventRow } from "./event_log.ts";

export type { EventRow } from "./event_log.ts";

/** Events of one session, the next ones after what the follower was handed before. */
export interface FeedBatch {
  sessionId: string;
  /** The seq the follower had reached: `events[0].seq > after`, nothing committed in between is missing. */
  after: number;
  /** Seq ascending; one page of the table (a read may merge several commits or split a large one). */
  events: EventRow[];
}

/** A session row appeared or went (its events come as batches; its info changes come as its events). */
export interface SessionChange {
  sessionId: string;
  change: "created" | "deleted";
}

export type OnEvents = (batch: FeedBatch) => void;
export type OnSessions = (change: SessionChange) => void;

/** What an appender announces: the session and its counter after the commit. */
export interface Committed {
  sessionId: string;
  lastSeq: number;
}

/** Every session's committed events, as they commit, on every replica. */
export interface EventFeed {
  /** Which database carries it. */
  readonly kind: "sqlite" | "postgres";
  /**
   * Follow every session from now: events committed after the returned promise resolved are handed to
   * `onEvents` once each, in seq order per session (sessions interleave freely); events committed before are
   * not. Session rows created or deleted from then on go to `onSessions`. A handler that throws does not stop
   * the feed. Deliveries are late by a hint's round trip, or by a sweep period when the hint was lost.
   *
   * With `from` (session → seq), the follower starts at those cursors instead of "now": a replica that keeps
   * its own copy of the log passes where that copy stands, and is handed everything after it, sessions it does
   * not know yet as `created` (from seq 1) and sessions gone meanwhile as `deleted`.
   * @returns a function that stops this follower.
   */
  follow(
    onEvents: OnEvents,
    onSessions?: OnSessions,
    from?: ReadonlyMap<string, number>,
  ): Promise<() => void>;
  /**
   * This replica appended the session's events up to `lastSeq` itself: its followers skip reading them back
   * (they hand over only what comes after). Never throws.
   */
  advance(sessionId: string, lastSeq: number): void;
  /**
   * Tell every replica's followers that `commit` is in the table: call it after the append resolved (and with
   * `lastSeq` 0 after creating a session row). Never throws and never waits; a hint that cannot be sent is
   * made up for by the followers' sweep.
   */
  announce(commit: Committed): void;
  /** Tell every replica's followers that a session row was deleted (after the delete resolved). */
  announceDeleted(sessionId: string): void;
  /** Stop every follower, the sweep and the listener; the feed is unusable afterwards. */
  close(): Promise<void>;
}

/** How often followers compare the sessions' counter rows with their cursors. */
export const FEED_SWEEP_MS = 500;
/** The most events one read hands over; a follower behind by more reads page after page. */
export const FEED_PAGE = 500;

/** The hint's text: `sessionId:lastSeq`, `-1` for a deleted session (session ids may contain `:`). */
export function hintText(sessionId: string, lastSeq: number): string {
  return `${sessionId}:${lastSeq}`;
}

/** A hint's text read back, or null for one this build does not understand (then the sweep covers it). */
export function parseHint(text: string): Committed | null {
  const at = text.lastIndexOf(":");
  if (at <= 0) return null;
  const lastSeq = Number(text.slice(at + 1));
  if (!Number.isSafeInteger(lastSeq) || lastSeq < -1) return null;
  return { sessionId: text.slice(0, at), lastSeq };
}
