/**
 * A replica's own copy of the shared event log: every session's events, read from PostgreSQL through the
 * event feed, stored in this replica's SQLite file and published to its browsers as they arrive. The copy is a
 * cache (PostgreSQL is the truth; a replica whose file is lost fills a new one from the log), and it is what
 * every synchronous reader of the daemon reads: pages of events, the list's glances, the search index, usage
 * and budgets, all unchanged from a single daemon.
 *
 * Order: the feed hands each session's events in seq order, and the store's append keeps replays out, so the
 * copy's rows and what browsers get are in seq order and never doubled, whichever path (the feed, a hello's
 * catch-up, this replica's own appends) brought an event first.
 */
import type { AgentEvent, SessionInfo } from "../protocol.ts";
import { eventJson } from "../event_codec.ts";
import type { SessionCommit, Store } from "../store.ts";
import type { EventLog, EventRow } from "../storage/event_log.ts";
import type { EventFeed, FeedBatch, SessionChange } from "../storage/event_feed.ts";

/** What the copy tells the rest of the daemon. */
export interface MirrorDeps {
  /** Events this copy just stored, for the hub and the in-process followers (as ingest's commits are). */
  committed(commits: SessionCommit[]): void;
  /** Another replica made a session's row: make it in the copy (the registry owns the copy's rows). */
  created(info: SessionInfo): void;
  /** Another replica deleted a session: remove it from the copy. */
  deleted(sessionId: string): void;
  /** Read a session's snapshot from the shared database (null when it has no row). */
  info(sessionId: string): Promise<SessionInfo | null>;
}

/** How many events one catch-up read asks for. */
const CATCH_UP_PAGE = 500;

/** The copy of the shared log in this replica's file. */
export class Mirror {
  #store: Store;
  #log: EventLog;
  #feed: EventFeed;
  #deps: MirrorDeps;
  /** Per session, the work in flight (a row to create, batches to store), so it stays in feed order. */
  #chains = new Map<string, Promise<void>>();
  #stop: (() => void) | null = null;

  constructor(store: Store, log: EventLog, feed: EventFeed, deps: MirrorDeps) {
    this.#store = store;
    this.#log = log;
    this.#feed = feed;
    this.#deps = deps;
  }

  /** Follow the feed from where the copy stands: what it missed while this replica was down comes first. */
  async start(): Promise<void> {
    const from = new Map(this.#store.listSessions().map((s) => [s.id, s.lastSeq]));
    this.#stop = await this.#feed.follow(
      (batch) => this.#chain(batch.sessionId, () => this.#apply(batch)),
      (change) => this.#chain(change.sessionId, () => this.#change(change)),
      from,
    );
  }

  /**
   * Store events read from the shared log in the copy (replays left out) and publish what was new.
   * @returns what changed, or null when the session has no row in the copy.
   */
  store(sessionId: string, rows: readonly EventRow[]): SessionCommit | null {
    if (!rows.length || !this.#store.getSession(sessionId)) return null;
    const events = rows.map((row) => JSON.parse(eventJson(row)) as AgentEvent);
    const [commit] = this.#store.appendBatch(events);
    if (commit?.inserted.length) this.#deps.committed([commit]);
    return commit ?? null;
  }

  /**
   * Bring a session's copy up to the shared log (a plugin's hello on this replica, before it is welcomed: its
   * next events must follow what the copy has). Waits for feed work of the session in flight first.
   */
  async catchUp(sessionId: string): Promise<void> {
    await this.#chains.get(sessionId);
    for (;;) {
      const after = this.#store.lastSeq(sessionId);
      const rows = await this.#log.events(sessionId, { after, limit: CATCH_UP_PAGE });
      this.store(sessionId, rows);
      if (rows.length < CATCH_UP_PAGE) return;
    }
  }

  /** Stop following (the copy keeps what it has). */
  close(): void {
    this.#stop?.();
    this.#stop = null;
  }

  #chain(sessionId: string, work: () => void | Promise<void>): void {
    const next = (this.#chains.get(sessionId) ?? Promise.resolve()).then(work).catch((error) => {
      // The next hint or sweep hands the events again (the copy's cursor did not move past them).
      console.error(`lvmh: session ${sessionId}: cannot copy the shared log: ${(error as Error).message}`);
    });
    this.#chains.set(sessionId, next);
    void next.finally(() => {
      if (this.#chains.get(sessionId) === next) this.#chains.delete(sessionId);
    });
  }

  #apply(batch: FeedBatch): void {
    if (!this.#store.getSession(batch.sessionId)) return; // deleted here meanwhile
    this.store(batch.sessionId, batch.events);
  }

  async #change(change: SessionChange): Promise<void> {
    if (change.change === "deleted") {
      if (this.#store.getSession(change.sessionId)) this.#deps.deleted(change.sessionId);
      return;
    }
    if (this.#store.getSession(change.sessionId)) return;
    const info = await this.#deps.info(change.sessionId);
    if (info && !this.#store.getSession(change.sessionId)) this.#deps.created(info);
  }
}
