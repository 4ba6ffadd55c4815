/**
 * SQLite persistence (node:sqlite, WAL): the event log keyed by (sessionId, seq), session snapshots and
 * settings. This is the only module that runs SQL on these tables (with lib/row_buffer.ts, its multi-row insert).
 */
import { DatabaseSync, type StatementSync } from "node:sqlite";
import type { AgentEvent, AskSet, SessionInfo, SessionRecord, StoredEvent } from "./protocol.ts";
import { type EncodedEvent, eventJson, type EventRow, payloadOf, storedForm } from "./event_codec.ts";
import { manyRowInsert, RowBuffer } from "./row_buffer.ts";
import { BUSY_TIMEOUT_MS, gateOf, type WriteGate } from "./write_gate.ts";
import { dropSearchIndex, SqliteSearch } from "./search/sqlite_index.ts";

export { BUSY_TIMEOUT_MS, wholeFileError, WriteGate, WriteRefused } from "./write_gate.ts";

/**
 * How long opening the file waits for another process's lock: nothing is served yet, so waiting costs no one,
 * and a start that gives up says so in one line (exit 2).
 */
export const OPEN_BUSY_TIMEOUT_MS = 5000;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS events(
  sessionId TEXT NOT NULL, seq INTEGER NOT NULL, ts INTEGER NOT NULL, type TEXT NOT NULL, payload TEXT NOT NULL,
  PRIMARY KEY(sessionId, seq));
CREATE TABLE IF NOT EXISTS sessions(
  id TEXT PRIMARY KEY, info TEXT NOT NULL, lastSeq INTEGER NOT NULL DEFAULT 0, lastEventAt INTEGER,
  online INTEGER DEFAULT 0, state TEXT NOT NULL DEFAULT 'idle');
CREATE TABLE IF NOT EXISTS settings(key TEXT PRIMARY KEY, value TEXT NOT NULL);
`;
/** Columns added after the first release, with their definitions (added to older files at open). */
const ADDED_SESSION_COLUMNS: Record<string, string> = { ask: "TEXT" };

/** What one committed batch changed for one session. */
export interface SessionCommit {
  sessionId: string;
  /** lastSeq before the batch: the `after` of the events frame browsers get. */
  after: number;
  lastSeq: number;
  /** The events actually inserted (replays of stored seqs are left out), encoded as browsers receive them. */
  inserted: EncodedEvent[];
  /** True when the session's snapshot or running state changed. */
  infoChanged: boolean;
}

/** Which page of a session's events to read: above `after`, or (with `before`) the latest below it. */
export interface EventsPage {
  after: number;
  before?: number;
  limit: number;
}

interface SessionRow {
  id: string;
  info: string;
  lastSeq: number;
  lastEventAt: number | null;
  state: string;
  /** The session's own ask set as JSON, or null for the daemon's default. */
  ask: string | null;
}

function stateAfter(type: string, current: string): string {
  if (type === "agent_start") return "running";
  if (type === "agent_end" || type === "agent_settled" || type === "bye") return "idle";
  return current;
}

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
  #insertEvent: StatementSync;
  #insertEvents: StatementSync;
  #selectAfter: StatementSync;
  #selectBefore: StatementSync;
  #updateSession: StatementSync;
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
    this.#db = new DatabaseSync(path);
    this.#db.exec(
      `PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=${OPEN_BUSY_TIMEOUT_MS};`,
    );
    this.#db.exec(SCHEMA);
    const have = new Set(
      (this.#db.prepare("PRAGMA table_info(sessions)").all() as { name: string }[]).map((c) => c.name),
    );
    for (const [name, type] of Object.entries(ADDED_SESSION_COLUMNS)) {
      if (!have.has(name)) this.#db.exec(`ALTER TABLE sessions ADD COLUMN ${name} ${type}`);
    }
    // `online` is a column of the first release, no longer written: a session is online while its socket is.
    this.#db.exec(`UPDATE sessions SET online = 0, state = 'idle',
      lastSeq = COALESCE((SELECT max(seq) FROM events WHERE events.sessionId = sessions.id), 0),
      lastEventAt = (SELECT ts FROM events WHERE events.sessionId = sessions.id ORDER BY seq DESC LIMIT 1)`);
    const rows = this.#db.prepare("SELECT id, info, lastSeq, lastEventAt, state, ask FROM sessions").all();
    for (const row of rows as unknown as SessionRow[]) this.#sessions.set(row.id, { ...row });
    this.#insertEvent = this.#db.prepare(
      "INSERT OR IGNORE INTO events(sessionId, seq, ts, type, payload) VALUES (?, ?, ?, ?, ?)",
    );
    this.#insertEvents = manyRowInsert(this.#db);
    this.#selectAfter = this.#db.prepare(
      "SELECT sessionId, seq, ts, type, payload FROM events WHERE sessionId = ? AND seq > ? ORDER BY seq LIMIT ?",
    );
    this.#selectBefore = this.#db.prepare(
      "SELECT sessionId, seq, ts, type, payload FROM events WHERE sessionId = ? AND seq < ? ORDER BY seq DESC LIMIT ?",
    );
    this.#updateSession = this.#db.prepare(
      "UPDATE sessions SET info = ?, lastSeq = ?, lastEventAt = ?, state = ?, ask = ? WHERE id = ?",
    );
    if (options.search === false) dropSearchIndex(this.#db);
    this.#search = options.search === false ? null : new SqliteSearch(this.#db);
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
   */
  appendBatch(events: AgentEvent[]): SessionCommit[] {
    this.#lastAppendAt = performance.now();
    return this.gate.run(() => this.#appendBatch(events));
  }

  /** @param manyAtOnce false: every row alone, decided by its own `changes` (the fallback below). */
  #appendBatch(events: AgentEvent[], manyAtOnce = true): SessionCommit[] {
    const commits = new Map<string, { commit: SessionCommit; row: SessionRow }>();
    const rows = new RowBuffer(this.#insertEvent, this.#insertEvents);
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      for (const event of events) {
        let entry = commits.get(event.sessionId);
        if (!entry) {
          const row = this.#sessions.get(event.sessionId);
          if (!row) throw new Error(`Cannot store event for unknown session "${event.sessionId}"`);
          entry = {
            commit: {
              sessionId: row.id,
              after: row.lastSeq,
              lastSeq: row.lastSeq,
              inserted: [],
              infoChanged: false,
            },
            row: { ...row },
          };
          commits.set(row.id, entry);
        }
        const { commit, row } = entry;
        const ts = Math.trunc(event.ts);
        const payload = payloadOf(event);
        // Above the session's highest stored seq (and above every seq of it earlier in this batch) the row is
        // surely new: it waits to go in with others. At or below, it may be a replay: it goes alone, now, and
        // its `changes` say whether it was already there.
        if (manyAtOnce && event.seq > row.lastSeq) {
          rows.add(event.sessionId, event.seq, ts, event.type, payload);
        } else if (rows.insertOne(event.sessionId, event.seq, ts, event.type, payload) === 0) continue;
        const json = eventJson({ sessionId: event.sessionId, seq: event.seq, ts, type: event.type, payload });
        commit.inserted.push({ seq: event.seq, json, event: storedForm(event, ts) });
        commit.lastSeq = row.lastSeq = Math.max(row.lastSeq, event.seq);
        row.lastEventAt = Math.max(row.lastEventAt ?? 0, ts);
        const state = stateAfter(event.type, row.state);
        if (state !== row.state || event.type === "session_info") commit.infoChanged = true;
        row.state = state;
        if (event.type === "session_info") {
          row.info = JSON.stringify(event.session);
          this.#search?.setSession(row.id, event.session);
        }
      }
      if (!rows.flush()) {
        // A row counted as new was already in the file: the cache of highest seqs is wrong. Never seen; if
        // it happens, the batch goes again one row at a time, which decides each row by its own `changes`.
        this.#db.exec("ROLLBACK");
        console.error("lvmh: a batch met rows it did not expect in the events table; stored row by row");
        return this.#appendBatch(events, false);
      }
      for (const { commit, row } of commits.values()) {
        if (commit.infoChanged) {
          this.#updateSession.run(row.info, row.lastSeq, row.lastEventAt, row.state, row.ask, row.id);
        }
      }
      this.#db.exec("COMMIT");
    } catch (error) {
      if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
      throw error;
    }
    // Only now, with the commit done, does the cache move on.
    for (const { row } of commits.values()) this.#sessions.set(row.id, row);
    return [...commits.values()].map((e) => e.commit);
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
    return query.before !== undefined
      ? (this.#selectBefore.all(id, query.before, query.limit) as unknown as EventRow[]).reverse()
      : this.#selectAfter.all(id, query.after, query.limit) as unknown as EventRow[];
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
