/**
 * SQLite persistence (node:sqlite, WAL): the event log keyed by (sessionId, seq), session snapshots and
 * settings. This is the only module that runs SQL on these tables, with its parts: the file's shape
 * (lib/store_file.ts), a batch's transaction (lib/batch_commit.ts, with lib/row_buffer.ts, its multi-row
 * insert) and the page reads (lib/event_pages.ts).
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import type { AgentEvent, AskSet, SessionInfo, SessionRecord, StoredEvent } from "./protocol.ts";
import { type Encoding, eventJson, type EventRow } from "./event_codec.ts";
import { BUSY_TIMEOUT_MS, gateOf, type WriteGate } from "./write_gate.ts";
import { dropSearchIndex, SqliteSearch } from "./search/sqlite_index.ts";
import { openStoreFile, type SessionRow } from "./store_file.ts";
import { type BatchTarget, batchTarget, commitBatch, type SessionCommit } from "./batch_commit.ts";
import { EventPages, type EventsPage } from "./event_pages.ts";

export { BUSY_TIMEOUT_MS, wholeFileError, WriteGate, WriteRefused } from "./write_gate.ts";
export { OPEN_BUSY_TIMEOUT_MS } from "./store_file.ts";
export type { SessionCommit } from "./batch_commit.ts";
export type { EventsPage } from "./event_pages.ts";

/**
 * The event log and session table over one SQLite file (whether a session is online is the session
 * registry's business, not the file's). Session rows are also kept in memory: this store is
 * the file's only writer, so the cache is exact, and a batch then costs its INSERTs plus a row update only
 * when a snapshot or running state changed. `lastSeq` and `lastEventAt` follow the event log, which is the
 * truth: they are written with other row changes and at close, and recomputed from the log at open.
 */
export class Store {
  /** Which database holds the daemon's state (`GET /api/health` says it). */
  readonly kind = "sqlite";
  #db: DatabaseSync;
  #sessions = new Map<string, SessionRow>();
  #pages: EventPages;
  #updateSession: StatementSync;
  #batch: BatchTarget;
  #search: SqliteSearch | null;
  #lastAppendAt = -Infinity;
  /** Whether the file takes writes: every write of this file (this store's and the other tables') goes through. */
  readonly gate: WriteGate;

  /**
   * Open (creating if needed) the database at `path`; every session starts offline.
   * @param options.search false: keep no search index (benchmarks compare ingest with and without it); an index
   * the file had is dropped, and built again from the events by the next open with it.
   * @throws {Error} when the file cannot be opened or is not an lvmh database.
   */
  constructor(path: string, options: { search?: boolean } = {}) {
    this.#db = openStoreFile(path);
    // `online` is a column of the first release, no longer written: a session is online while its socket is.
    this.#db.exec(`UPDATE sessions SET online = 0, state = 'idle',
      lastSeq = COALESCE((SELECT max(seq) FROM events WHERE events.sessionId = sessions.id), 0),
      lastEventAt = (SELECT ts FROM events WHERE events.sessionId = sessions.id ORDER BY seq DESC LIMIT 1)`);
    const rows = this.#db.prepare("SELECT id, info, lastSeq, lastEventAt, state, ask FROM sessions").all();
    for (const row of rows as unknown as SessionRow[]) this.#sessions.set(row.id, { ...row });
    this.#pages = new EventPages(this.#db);
    this.#updateSession = this.#db.prepare(
      "UPDATE sessions SET info = ?, lastSeq = ?, lastEventAt = ?, state = ?, ask = ? WHERE id = ?",
    );
    if (options.search === false) dropSearchIndex(this.#db);
    this.#search = options.search === false ? null : new SqliteSearch(this.#db);
    this.#batch = batchTarget(this.#db, {
      updateSession: this.#updateSession,
      search: this.#search,
      rowOf: (id) => this.#sessions.get(id),
    });
    this.#db.exec(`PRAGMA busy_timeout=${BUSY_TIMEOUT_MS}`);
    this.gate = gateOf(this.#db);
  }

  /** The full-text index of the event log (lib/search/), following the events behind ingest. */
  get search(): SqliteSearch | null {
    return this.#search;
  }

  /** When a batch of events was last stored (`performance.now()`; -Infinity before the first). */
  get lastAppendAt(): number {
    return this.#lastAppendAt;
  }

  /** The database handle, for the other tables' stores (approvals) that share this file. */
  get db(): DatabaseSync {
    return this.#db;
  }

  /**
   * Insert a session or replace its snapshot, keeping its event log and lastSeq.
   * @param options.keepSnapshot leave an existing session's snapshot alone (insert only when unknown).
   * @param options.ask a new ask set for the session (`undefined` leaves it unchanged).
   */
  upsertSession(info: SessionInfo, options: { keepSnapshot?: boolean; ask?: AskSet } = {}): void {
    const row = this.#sessions.get(info.id);
    const ask = options.ask === undefined ? undefined : JSON.stringify(options.ask);
    if (row) {
      if (options.keepSnapshot && ask === undefined) return;
      const next = {
        ...row,
        info: options.keepSnapshot ? row.info : JSON.stringify(info),
        ask: ask === undefined ? row.ask : ask,
      };
      // A plugin reconnecting with the same snapshot writes nothing, so it is welcomed even while the file
      // refuses writes (disk full, locked): its replay then meets the failure and is not acked.
      if (next.info === row.info && next.ask === row.ask) return;
      if (next.info === row.info || !this.#search) return this.#write(next);
      const search = this.#search;
      this.gate.run(() =>
        this.#inTransaction(() => {
          this.#updateSession.run(next.info, next.lastSeq, next.lastEventAt, next.state, next.ask, next.id);
          search.setSession(info.id, info);
        })
      );
      this.#sessions.set(next.id, next);
      return;
    }
    const fresh = {
      id: info.id,
      info: JSON.stringify(info),
      lastSeq: 0,
      lastEventAt: null,
      ask: ask ?? null,
    };
    this.gate.run(() =>
      this.#inTransaction(() => {
        this.#db.prepare("INSERT INTO sessions(id, info, ask) VALUES (?, ?, ?)").run(
          fresh.id,
          fresh.info,
          fresh.ask,
        );
        this.#search?.setSession(info.id, info);
      })
    );
    this.#sessions.set(info.id, { ...fresh, state: "idle" });
  }

  /** A session's own ask set, or null when it follows the daemon's default (or is unknown). */
  askOf(id: string): AskSet | null {
    const ask = this.#sessions.get(id)?.ask;
    return ask ? JSON.parse(ask) as AskSet : null;
  }

  /** Run `write` in a transaction of its own (rolled back when it throws). */
  #inTransaction(write: () => void): void {
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      write();
      this.#db.exec("COMMIT");
    } catch (error) {
      if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
      throw error;
    }
  }

  /** Mark a session no longer running (its plugin went away mid-run). */
  setIdle(id: string): void {
    const row = this.#sessions.get(id);
    if (!row || row.state === "idle") return;
    try {
      this.#write({ ...row, state: "idle" });
    } catch {
      // The file refused the write (disk full, locked). Not fatal: open() resets every state to idle, so the
      // cache alone may move on.
      this.#sessions.set(id, { ...row, state: "idle" });
    }
  }

  /** Write a session row to the file (through the gate), then to the cache. */
  #write(row: SessionRow): void {
    this.gate.run(() =>
      this.#updateSession.run(row.info, row.lastSeq, row.lastEventAt, row.state, row.ask, row.id)
    );
    this.#sessions.set(row.id, row);
  }

  /**
   * Persist a batch of events in one transaction. Replayed (sessionId, seq) pairs are ignored.
   * @throws {WriteRefused} at once while the file refuses writes (see `gate`); nothing is then stored.
   * @throws {Error} when SQLite fails; nothing of the batch is then stored.
   * @param cuts the encodings at hand, by index in `events` (`cutFrom`); the other events are encoded here.
   */
  appendBatch(events: AgentEvent[], cuts?: readonly (Encoding | undefined)[]): SessionCommit[] {
    this.#lastAppendAt = performance.now();
    return this.gate.run(() => {
      const { commits, rows } = commitBatch(events, this.#batch, cuts);
      // Only now, with the commit done, does the cache move on.
      for (const row of rows) this.#sessions.set(row.id, row);
      return commits;
    });
  }

  /**
   * Remove a session and its whole event log.
   * @returns false when there is no such session.
   * @throws {Error} when SQLite fails; nothing is then removed.
   */
  deleteSession(id: string): boolean {
    if (!this.#sessions.has(id)) return false;
    this.gate.run(() => {
      this.#db.exec("BEGIN IMMEDIATE");
      try {
        // The index finds a session's rows by its events' and its own rowids: it goes first.
        this.#search?.removeSession(id);
        this.#db.prepare("DELETE FROM events WHERE sessionId = ?").run(id);
        this.#db.prepare("DELETE FROM sessions WHERE id = ?").run(id);
        this.#search?.sessionRemoved();
        this.#db.exec("COMMIT");
      } catch (error) {
        if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
        throw error;
      }
    });
    this.#sessions.delete(id);
    return true;
  }

  /** The highest persisted seq of a session, 0 if none. */
  lastSeq(id: string): number {
    return this.#sessions.get(id)?.lastSeq ?? 0;
  }

  /** One session, or null. */
  getSession(id: string): SessionRecord | null {
    const row = this.#sessions.get(id);
    return row ? summary(row) : null;
  }

  /** Every session, most recent activity first. */
  listSessions(): SessionRecord[] {
    return [...this.#sessions.values()]
      .sort((a, b) => (b.lastEventAt ?? 0) - (a.lastEventAt ?? 0) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .map(summary);
  }

  /**
   * Persisted events of a session, seq ascending, as one JSON array text (rows are never re-parsed).
   * With `before`, the latest `limit` events below it; otherwise the first `limit` above `after`.
   */
  eventsJson(id: string, query: EventsPage): string {
    return "[" + this.eventRows(id, query).map(eventJson).join(",") + "]";
  }

  /** Persisted event rows of a session, seq ascending; see `eventsJson`. */
  eventRows(id: string, query: EventsPage): EventRow[] {
    return this.#pages.rows(id, query);
  }

  /** Persisted events as objects; see `eventsJson`. */
  events(id: string, query: EventsPage): StoredEvent[] {
    return JSON.parse(this.eventsJson(id, query));
  }

  /** A stored setting, or null. */
  getSetting(key: string): string | null {
    const row = this.#db.prepare("SELECT value FROM settings WHERE key = ?").get(key) as
      | { value: string }
      | undefined;
    return row?.value ?? null;
  }

  /** Store a setting, replacing any earlier value. */
  setSetting(key: string, value: string): void {
    this.gate.run(() =>
      this.#db.prepare(
        "INSERT INTO settings(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
      ).run(key, value)
    );
  }

  /** Remove a setting; no error when absent. */
  deleteSetting(key: string): void {
    this.gate.run(() => this.#db.prepare("DELETE FROM settings WHERE key = ?").run(key));
  }

  /** Write the in-memory lastSeq and lastEventAt of every session, then close the database. */
  close(): void {
    if (!this.#db.isOpen) return;
    try {
      this.gate.run(() => {
        this.#db.exec("BEGIN");
        for (const row of this.#sessions.values()) this.#write(row);
        this.#db.exec("COMMIT");
      });
    } catch {
      // Not fatal: open() recomputes both from the event log.
      if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
    }
    this.#db.close();
  }
}

function summary(row: SessionRow): SessionRecord {
  return {
    ...(JSON.parse(row.info) as SessionInfo),
    id: row.id,
    state: row.state === "running" ? "running" : "idle",
    lastSeq: row.lastSeq,
    lastEventAt: row.lastEventAt,
  };
}
