/**
 * The event feed on the daemon's SQLite file. One daemon owns the file, so an announce is an in-process call
 * to every feed on the same handle, after the commit (on a microtask, once the appender has its answer); the
 * sweep of the counter rows stays as the backstop the contract promises, and finds rows written without an
 * announce.
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import type { Store } from "../store.ts";
import {
  type Committed,
  type EventFeed,
  FEED_PAGE,
  FEED_SWEEP_MS,
  type OnEvents,
  type OnSessions,
} from "./event_feed.ts";
import { type FeedSource, Followers } from "./feed_followers.ts";
import { settle } from "./sqlite_sync.ts";

/** Every feed on a handle, for the in-process hint. */
const feedsOf = new WeakMap<DatabaseSync, Set<Followers>>();

/** The event feed on a `Store` (which stays its owner: `close()` does not close it). */
export class SqliteEventFeed implements EventFeed {
  readonly kind = "sqlite";
  #db: DatabaseSync;
  #followers: Followers;
  #closed = false;

  constructor(store: Store, options: { sweepMs?: number; page?: number } = {}) {
    const db = this.#db = store.db;
    // The store's cache holds each session's counter (its table column is written only with info changes);
    // the ids come from the table, so a row written without this store is still seen.
    const ids: StatementSync = db.prepare("SELECT id FROM sessions");
    const one: StatementSync = db.prepare("SELECT 1 AS x FROM sessions WHERE id = ?");
    const source: FeedSource = {
      counters: () =>
        settle(() => new Map((ids.all() as { id: string }[]).map((r) => [r.id, store.lastSeq(r.id)]))),
      counter: (sessionId) => settle(() => one.get(sessionId) ? store.lastSeq(sessionId) : null),
      events: (sessionId, after, limit) => settle(() => store.eventRows(sessionId, { after, limit })),
    };
    this.#followers = new Followers(source, options.sweepMs ?? FEED_SWEEP_MS, options.page ?? FEED_PAGE);
    let feeds = feedsOf.get(db);
    if (!feeds) feedsOf.set(db, feeds = new Set());
    feeds.add(this.#followers);
  }

  follow(
    onEvents: OnEvents,
    onSessions?: OnSessions,
    from?: ReadonlyMap<string, number>,
  ): Promise<() => void> {
    if (this.#closed) return Promise.reject(new Error("The event feed is closed"));
    return this.#followers.follow(onEvents, onSessions, from);
  }

  advance(sessionId: string, lastSeq: number): void {
    this.#followers.advance(sessionId, lastSeq);
  }

  announce(commit: Committed): void {
    this.#hint(commit.sessionId, commit.lastSeq);
  }

  announceDeleted(sessionId: string): void {
    this.#hint(sessionId, -1);
  }

  close(): Promise<void> {
    this.#closed = true;
    this.#followers.stop();
    feedsOf.get(this.#db)?.delete(this.#followers);
    return Promise.resolve();
  }

  #hint(sessionId: string, lastSeq: number): void {
    for (const followers of feedsOf.get(this.#db) ?? []) {
      queueMicrotask(() => followers.hint(sessionId, lastSeq));
    }
  }
}
