/**
 * The search index of the SQLite store: FTS5 over the searchable text of each event (lib/search/extract.ts).
 * The index keeps no copy of the text (contentless, with deletes): a row's id is its event's rowid in
 * `events` (a session's own names use minus its rowid in `sessions`), and beside the index it keeps only the
 * small columns a hit shows. A hit's snippet is made from the event itself (lib/search/snippet.ts).
 *
 * Events are indexed behind ingest, not in its transactions: FTS5's tokenizing and posting lists cost two to
 * three times the event's own insert, which would cut the ingest rate to a third. The index follows the
 * events table in rowid order (`indexed_upto`, kept in the same transaction as the rows it covers, so a crash
 * leaves them consistent), in steps that lib/search/indexer.ts runs when ingest pauses. A search reads the
 * events past that point itself and matches them with the index's own rules (lib/search/match.ts), so a hit
 * is still findable as soon as its event is readable. Session names are few and indexed at once.
 *
 * This module keeps the index (layout, writes, its mark) and pages a search; the two reads a page is made
 * of are beside it: the events past the index (lib/search/unindexed_hits.ts) and the index's ranked matches
 * (lib/search/ranked_hits.ts), with the tags column both agree on (lib/search/tags.ts) and the page cursor
 * (lib/search/cursor.ts).
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import { docOf, type SearchDoc, sessionText } from "./extract.ts";
import { parseQuery } from "./query.ts";
import { tagsOf } from "./tags.ts";
import type { EventRow, IndexedEvent } from "./event_rows.ts";
import { unindexedHits } from "./unindexed_hits.ts";
import { indexedHits, RANKED_WINDOW } from "./ranked_hits.ts";
import { decodeCursor, encodeCursor } from "./cursor.ts";
import type { SearchIndex, SearchPage, SearchRequest } from "./types.ts";

// prefix='2': a two-letter prefix (`w1*`) otherwise reads every term it starts (p99 190 ms at 50,000 events,
// 16 ms with it), for an index about 45% larger; longer prefixes are narrow enough without.
const SCHEMA = `
CREATE VIRTUAL TABLE IF NOT EXISTS search_fts USING fts5(
  body, tags, sessionId UNINDEXED, seq UNINDEXED, ts UNINDEXED, kind UNINDEXED, role UNINDEXED, toolName UNINDEXED,
  content='', contentless_delete=1, contentless_unindexed=1, tokenize='unicode61 remove_diacritics 2', prefix='2');
CREATE TABLE IF NOT EXISTS search_meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL);
`;
/** The index's layout: a file with another (or none recorded) has its index dropped and built again. */
const LAYOUT = 5;

/** Rows per multi-row insert into the index: one statement run crosses into SQLite once (lib/row_buffer.ts). */
const DOCS_PER_INSERT = 32;
const DOC_COLUMNS = 9;

/** How far the index is behind the events: rowids up to `upto` are indexed, the events go up to `top`. */
export interface IndexLag {
  upto: number;
  top: number;
}

/** The SQLite store's search index (it shares the store's connection and transactions). */
export class SqliteSearch implements SearchIndex {
  #db: DatabaseSync;
  #insert: StatementSync;
  #insertMany: StatementSync;
  #rowidsOf: StatementSync;
  #statements = new Map<string, StatementSync>();

  /**
   * Create the index when missing; its sessions are indexed at once (one row each), their events by
   * `indexStep`.
   */
  constructor(db: DatabaseSync) {
    this.#db = db;
    const has = (name: string) =>
      db.prepare("SELECT 1 FROM sqlite_master WHERE name = ?").get(name) !== undefined;
    const layout = has("search_meta")
      ? (db.prepare("SELECT value FROM search_meta WHERE key = 'layout'").get() as
        | { value: number }
        | undefined)
        ?.value
      : undefined;
    const existed = has("search_fts") && layout === LAYOUT;
    if (!existed) dropSearchIndex(db);
    db.exec(SCHEMA);
    this.#insert = db.prepare(
      "INSERT INTO search_fts(rowid, body, tags, sessionId, seq, ts, kind, role, toolName) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    );
    this.#insertMany = db.prepare(
      "INSERT INTO search_fts(rowid, body, tags, sessionId, seq, ts, kind, role, toolName) VALUES " +
        Array(DOCS_PER_INSERT).fill("(?, ?, ?, ?, ?, ?, ?, ?, ?)").join(", "),
    );
    this.#rowidsOf = db.prepare(
      "SELECT seq, rowid AS r FROM events WHERE sessionId = ? AND seq BETWEEN ? AND ?",
    );
    if (existed) return;
    db.exec("BEGIN IMMEDIATE");
    try {
      this.#setMeta("layout", LAYOUT);
      this.#setMeta("indexed_upto", 0);
      const sessions = db.prepare("SELECT id, info FROM sessions").all() as { id: string; info: string }[];
      for (const s of sessions) this.setSession(s.id, JSON.parse(s.info));
      db.exec("COMMIT");
    } catch (error) {
      if (db.isTransaction) db.exec("ROLLBACK");
      throw error;
    }
  }

  /** The connection the index writes with (the store's). */
  get db(): DatabaseSync {
    return this.#db;
  }

  /**
   * Index up to `rows` events past the index, in rowid order, in the caller's transaction.
   * @returns how far the index is behind afterwards (null when it has caught up).
   */
  indexStep(rows: number): IndexLag | null {
    const upto = this.#meta("indexed_upto") ?? 0;
    const page = this.#prepared(
      "SELECT rowid, sessionId, seq, ts, type, payload FROM events WHERE rowid > ? ORDER BY rowid LIMIT ?",
    ).all(upto, rows) as unknown as EventRow[];
    if (!page.length) return null;
    const args: (string | number | null)[] = [];
    for (const row of page) {
      const doc = docOf({ ...JSON.parse(row.payload), type: row.type });
      if (!doc) continue;
      args.push(...this.#columns(row.rowid, row, doc));
      if (args.length === DOCS_PER_INSERT * DOC_COLUMNS) this.#insertMany.run(...args.splice(0));
    }
    for (let i = 0; i < args.length; i += DOC_COLUMNS) this.#insert.run(...args.slice(i, i + DOC_COLUMNS));
    const next = page[page.length - 1].rowid;
    this.#setMeta("indexed_upto", next);
    return page.length < rows ? null : this.lag();
  }

  /** How far the index is behind the events (null when it is not). */
  lag(): IndexLag | null {
    const upto = this.#meta("indexed_upto") ?? 0;
    const top = this.#topRowid();
    return top > upto ? { upto, top } : null;
  }

  #topRowid(): number {
    return (this.#prepared("SELECT max(rowid) AS m FROM events").get() as { m: number | null }).m ?? 0;
  }

  #columns(rowid: number, event: IndexedEvent, doc: SearchDoc): (string | number | null)[] {
    return [
      rowid,
      doc.body,
      tagsOf(event.sessionId, doc.kind),
      event.sessionId,
      event.seq,
      Math.trunc(event.ts),
      doc.kind,
      doc.role,
      doc.toolName,
    ];
  }

  /** Index (or index again) a session's name, title, cwd and repo; called inside the store's write. */
  setSession(id: string, info: Record<string, unknown>): void {
    const docid = this.#sessionDocid(id);
    if (docid === null) return;
    this.#prepared("DELETE FROM search_fts WHERE rowid = ?").run(docid);
    const body = sessionText(info);
    if (!body) return;
    const ts = typeof info.startedAt === "number" ? info.startedAt : 0;
    this.#insert.run(docid, body, tagsOf(id, "session"), id, 0, ts, "session", null, null);
  }

  /** Remove everything of a session; called inside the transaction that deletes it, before its rows go. */
  removeSession(id: string): void {
    const upto = this.#meta("indexed_upto") ?? 0;
    this.#prepared(
      "DELETE FROM search_fts WHERE rowid IN (SELECT rowid FROM events WHERE sessionId = ? AND rowid <= ?)",
    ).run(id, upto);
    const docid = this.#sessionDocid(id);
    if (docid !== null) this.#prepared("DELETE FROM search_fts WHERE rowid = ?").run(docid);
  }

  /**
   * After a session's events are deleted: SQLite gives a new row the highest rowid left plus one, so when the
   * deleted rows were the newest, new events could take rowids the index already passed. The index's mark
   * goes back to the highest rowid left (everything above it is gone).
   */
  sessionRemoved(): void {
    const upto = this.#meta("indexed_upto") ?? 0;
    const top = this.#topRowid();
    if (top < upto) this.#setMeta("indexed_upto", top);
  }

  /** A session's own row: minus its rowid in `sessions` (events' rowids are positive). */
  #sessionDocid(id: string): number | null {
    const row = this.#prepared("SELECT rowid AS r FROM sessions WHERE id = ?").get(id) as
      | { r: number }
      | undefined;
    return row ? -row.r : null;
  }

  search(request: SearchRequest): SearchPage {
    const parsed = parseQuery(request.q);
    if (!parsed.match) return { hits: [] };
    // Fixed at the first page: events stored, and indexed, while a person pages on do not shift the pages.
    const top = this.#topRowid();
    const at = request.cursor === undefined
      ? { top, upto: this.#meta("indexed_upto") ?? 0, tail: top, offset: 0 }
      : decodeCursor(request.cursor);
    at.upto = Math.min(at.upto, at.top);
    // The newest events, not indexed yet, come first; then the index's ranked hits.
    const want = request.limit + 1;
    const prepared = (sql: string) => this.#prepared(sql);
    const fresh = unindexedHits(prepared, request, parsed.terms, at.upto, at.tail, want);
    const indexed = fresh.length < want
      ? indexedHits(prepared, request, parsed, at.upto, at.offset, want - fresh.length)
      : [];
    const all = [...fresh.map((f) => f.hit), ...indexed];
    const hits = all.slice(0, request.limit);
    if (all.length <= request.limit) return { hits };
    const next = fresh.length > request.limit
      ? { ...at, tail: fresh[request.limit].rowid }
      : { ...at, tail: at.upto, offset: at.offset + request.limit - fresh.length };
    return next.offset < RANKED_WINDOW ? { hits, next: encodeCursor(next) } : { hits };
  }

  #prepared(sql: string): StatementSync {
    let statement = this.#statements.get(sql);
    if (!statement) {
      statement = this.#db.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  #meta(key: string): number | null {
    const row = this.#prepared("SELECT value FROM search_meta WHERE key = ?").get(key) as
      | { value: number }
      | undefined;
    return row?.value ?? null;
  }

  #setMeta(key: string, value: number): void {
    this.#prepared(
      "INSERT INTO search_meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
    ).run(key, value);
  }
}

/**
 * Drop the index from a file that is about to take events without it, so the next open with the index builds it
 * again from the events instead of trusting an index that misses some.
 */
export function dropSearchIndex(db: DatabaseSync): void {
  db.exec(
    "DROP TABLE IF EXISTS search_docs; DROP TABLE IF EXISTS search_fts; DROP TABLE IF EXISTS search_meta",
  );
}
