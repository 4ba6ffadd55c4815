/**
 * The event feed on PostgreSQL, for several replicas on one database. An appender's `announce` queues a
 * `sessionId:lastSeq` hint; hints go out as `pg_notify` calls in one statement of their own, after the
 * append's commit and never inside it (a NOTIFY-ing transaction takes a global lock at commit). While one such
 * statement is out, further announces wait and leave together with the next: under load, one NOTIFY
 * transaction per round trip carries every session's latest counter, and a lone append is hinted at once.
 *
 * Followers LISTEN on a dedicated connection (lib/storage/pg_listener.ts: re-LISTEN after a close, a watchdog
 * for a silent one) and read the rows themselves; each (re)LISTEN and every `FEED_SWEEP_MS` they read the
 * sessions' counter rows (`SELECT id, last_seq FROM sessions`, one small row per session) to find what a lost
 * hint missed.
 */
import { type ConnectOptions, PgStore, type Sql } from "./pg_client.ts";
import { openMigrated } from "./pg_migrate.ts";
import { PgEventLog } from "./pg_event_log.ts";
import { LISTENER_PING_MS, listenerClient, PgListener } from "./pg_listener.ts";
import { safeInteger } from "./event_log.ts";
import {
  type Committed,
  type EventFeed,
  FEED_PAGE,
  FEED_SWEEP_MS,
  hintText,
  type OnEvents,
  type OnSessions,
  parseHint,
} from "./event_feed.ts";
import { type FeedSource, Followers } from "./feed_followers.ts";

/** The NOTIFY channel; the payload is `sessionId:lastSeq` (empty: a listener's liveness ping). */
export const EVENTS_CHANNEL = "lvmh_ev";
/** NOTIFY refuses a payload of 8000 bytes or more; a longer hint is left to the sweep. */
const MAX_PAYLOAD_BYTES = 7_999;
const encoder = new TextEncoder();

export interface PgEventFeedOptions {
  /** Sweep period (default `FEED_SWEEP_MS`). */
  sweepMs?: number;
  /** Ping period of the listener's watchdog (default 5 s). */
  pingMs?: number;
  /** Events per read (default `FEED_PAGE`). */
  page?: number;
  /** true: `close()` ends the pool. */
  ownsPool?: boolean;
  /** The sessions this process appends itself (a holder's): see `Followers`. */
  writtenHere?: (sessionId: string) => boolean;
}

/** The event feed over a PostgreSQL pool whose database is migrated. */
export class PgEventFeed extends PgStore implements EventFeed {
  #followers: Followers;
  #listener: PgListener;
  /** Hints waiting for the next NOTIFY statement: session → latest counter announced (-1: deleted). */
  #outbox = new Map<string, number>();
  #sending: Promise<void> | null = null;
  #closed = false;

  /**
   * @param connectListener opens the client whose one connection LISTENs (again after the watchdog dropped
   *   the previous one); never the pool itself.
   */
  constructor(sql: Sql, connectListener: () => Sql, options: PgEventFeedOptions = {}) {
    super(sql, options);
    const log = new PgEventLog(sql);
    const source: FeedSource = {
      async counters() {
        const rows = await sql`SELECT id, last_seq FROM sessions`;
        return new Map(rows.map((r) => [r.id as string, safeInteger(r.last_seq)]));
      },
      async counter(sessionId) {
        const [row] = await sql`SELECT last_seq FROM sessions WHERE id = ${sessionId}`;
        return row ? safeInteger(row.last_seq) : null;
      },
      events: (sessionId, after, limit) => log.events(sessionId, { after, limit }),
    };
    this.#followers = new Followers(
      source,
      options.sweepMs ?? FEED_SWEEP_MS,
      options.page ?? FEED_PAGE,
      options.writtenHere,
    );
    this.#listener = new PgListener({
      channel: EVENTS_CHANNEL,
      connect: connectListener,
      pool: sql,
      onHint: (text) => {
        const hint = parseHint(text);
        if (hint) this.#followers.hint(hint.sessionId, hint.lastSeq);
      },
      onListen: () => void this.#followers.sweep(),
      active: () => this.#followers.size > 0,
      pingMs: options.pingMs ?? LISTENER_PING_MS,
    });
  }

  /**
   * Connect to `url` and migrate its schema (lib/storage/pg_migrate.ts).
   * @throws {Error} when the database cannot be reached or migrated; the pool is then closed.
   */
  static async open(
    url: string,
    options: ConnectOptions & Omit<PgEventFeedOptions, "ownsPool"> = {},
  ): Promise<PgEventFeed> {
    const sql = await openMigrated(url, options);
    const listener = listenerClient(url, options);
    return new PgEventFeed(sql, listener, { ...options, ownsPool: true });
  }

  async follow(
    onEvents: OnEvents,
    onSessions?: OnSessions,
    from?: ReadonlyMap<string, number>,
  ): Promise<() => void> {
    if (this.#closed) throw new Error("The event feed is closed");
    // LISTEN in place before the cursors are read: a commit after that read is then hinted to this follower
    // (should the LISTEN fail, its re-LISTEN sweeps, and so does the period).
    await this.#listener.start();
    return await this.#followers.follow(onEvents, onSessions, from);
  }

  advance(sessionId: string, lastSeq: number): void {
    this.#followers.advance(sessionId, lastSeq);
  }

  announce(commit: Committed): void {
    this.#queue(commit.sessionId, Math.max(this.#outbox.get(commit.sessionId) ?? -1, commit.lastSeq));
  }

  announceDeleted(sessionId: string): void {
    this.#queue(sessionId, -1);
  }

  override async close(): Promise<void> {
    this.#closed = true;
    this.#followers.stop();
    await this.#listener.close();
    await this.#sending;
    await super.close();
  }

  #queue(sessionId: string, lastSeq: number): void {
    if (this.#closed) return;
    this.#outbox.set(sessionId, lastSeq);
    this.#sending ??= this.#send();
  }

  /** Send what waits, in one statement, until nothing waits. */
  async #send(): Promise<void> {
    try {
      // Let the announces of this tick join (and keep `#sending` set until after its assignment).
      await Promise.resolve();
      while (this.#outbox.size && !this.#closed) {
        const hints: string[] = [];
        for (const [id, seq] of this.#outbox) {
          const text = hintText(id, seq);
          if (encoder.encode(text).length <= MAX_PAYLOAD_BYTES) hints.push(text);
        }
        this.#outbox.clear();
        if (!hints.length) continue;
        // Committed already: a hint that fails to go is found by the followers' sweep.
        await this.sql`SELECT pg_notify(${EVENTS_CHANNEL}, h) FROM unnest(${hints}::text[]) AS h`
          .catch(() => {});
      }
    } finally {
      this.#sending = null;
    }
  }
}
