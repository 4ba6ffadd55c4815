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
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import { InvalidError } from "../errors.ts";
import { docOf, type SearchDoc, sessionText } from "./extract.ts";
import { parseQuery, type QueryTerm } from "./query.ts";
import { makeSnippet } from "./snippet.ts";
import { textMatcher } from "./match.ts";
import type { SearchHit, SearchIndex, SearchKind, SearchPage, SearchRequest } from "./types.ts";

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

/**
 * The most events past the index a search reads itself (newest first). Ingest far ahead of the index (a flood,
 * or a large file met for the first time) leaves older unindexed events out until the indexer reaches them.
 */
export const MAX_UNINDEXED_SCAN = 20_000;
/** Rows read at a time of the events past the index. */
const UNINDEXED_PAGE = 128;

/**
 * Matches ranked per query: the newest this many, by bm25. A word in half of a million events would otherwise
 * rank every one of them for each page; a person reviewing agent work wants the recent ones first anyway.
 * 500 rather than 2,000: a phrase of two common words at 1,000,000 events went from p50 82 to 61 ms.
 */
export const RANKED_WINDOW = 500;

/** Rows per multi-row insert into the index: one statement run crosses into SQLite once (lib/row_buffer.ts). */
const DOCS_PER_INSERT = 32;
const DOC_COLUMNS = 9;

/** The event-row fields the index reads. */
export interface IndexedEvent {
  sessionId: string;
  seq: number;
  ts: number;
  type: string;
}

/** How far the index is behind the events: rowids up to `upto` are indexed, the events go up to `top`. */
export interface IndexLag {
  upto: number;
  top: number;
}

interface HitRow {
  id: number;
  sessionId: string;
  seq: number;
  ts: number;
  kind: SearchKind;
  role: string | null;
  toolName: string | null;
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
    ).all(upto, rows) as unknown as (IndexedEvent & { rowid: number; payload: string })[];
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
    const fresh = this.#unindexedHits(request, parsed.terms, at.upto, at.tail, want);
    const indexed = fresh.length < want
      ? this.#indexedHits(request, parsed, at.upto, at.offset, want - fresh.length)
      : [];
    const all = [...fresh.map((f) => f.hit), ...indexed];
    const hits = all.slice(0, request.limit);
    if (all.length <= request.limit) return { hits };
    const next = fresh.length > request.limit
      ? { ...at, tail: fresh[request.limit].rowid }
      : { ...at, tail: at.upto, offset: at.offset + request.limit - fresh.length };
    return next.offset < RANKED_WINDOW ? { hits, next: encodeCursor(next) } : { hits };
  }

  /**
   * Up to `want` hits among the events past the index (rowids in (`upto`, `tail`]), read and matched here,
   * newest first, each with its rowid (where the next page goes on). Reads in small pages and stops once it
   * has enough, so a common word costs a few rows; at most `MAX_UNINDEXED_SCAN` rows in all.
   */
  #unindexedHits(
    request: SearchRequest,
    terms: QueryTerm[],
    upto: number,
    tail: number,
    want: number,
  ): { hit: SearchHit; rowid: number }[] {
    const found: { hit: SearchHit; rowid: number }[] = [];
    const matcher = tail > upto ? textMatcher(terms) : null;
    if (!matcher) return found;
    // SQLite narrows the rows before JavaScript parses any (the scan's cost): each wanted term's longest
    // token, when plain ASCII, must appear in the row's text, ignoring case, unless the row has characters
    // beyond ASCII (an accented letter the index folds to that token). Never a row that could match is left out.
    const filters = ["rowid > ?", "rowid <= ?"];
    const args: (string | number)[] = [];
    if (request.sessionId !== undefined) (filters.push("sessionId = ?"), args.push(request.sessionId));
    for (const token of matcher.requiredAscii) {
      filters.push("(payload LIKE ? OR octet_length(payload) > length(payload))");
      args.push(`%${token}%`);
    }
    const page = this.#prepared(
      `SELECT rowid, sessionId, seq, ts, type, payload FROM events WHERE ${filters.join(" AND ")}
       ORDER BY rowid DESC LIMIT ${UNINDEXED_PAGE}`,
    );
    let below = tail;
    for (let scanned = 0; scanned < MAX_UNINDEXED_SCAN;) {
      const rows = page.all(
        upto,
        below,
        ...args,
      ) as unknown as (IndexedEvent & { rowid: number; payload: string })[];
      for (const row of rows) {
        const doc = docOf({ ...JSON.parse(row.payload), type: row.type });
        if (!doc || !kindWanted(doc.kind, request.type) || !matcher.test(doc.body)) continue;
        const hit: SearchHit = {
          sessionId: row.sessionId,
          seq: row.seq,
          ts: Math.trunc(row.ts),
          type: doc.kind,
          snippet: makeSnippet(doc.body, terms),
        };
        if (doc.role) hit.role = doc.role;
        if (doc.toolName) hit.toolName = doc.toolName;
        if (found.push({ hit, rowid: row.rowid }) === want) return found;
      }
      if (rows.length < UNINDEXED_PAGE) break;
      scanned += rows.length;
      below = rows[rows.length - 1].rowid - 1;
    }
    return found;
  }

  /** Ranked hits from the index among rowids up to `upto` (the session rows included). */
  #indexedHits(
    request: SearchRequest,
    parsed: { match: string | null; terms: QueryTerm[] },
    upto: number,
    offset: number,
    limit: number,
  ): SearchHit[] {
    try {
      return this.#ranked(request, parsed.match!, parsed.terms, upto, offset, limit);
    } catch {
      // The quoting in lib/search/query.ts leaves FTS5 nothing to refuse; should it refuse anyway, the words
      // alone are searched, and failing that nothing is found: a person's query never becomes a 500.
      const plain = plainMatch(parsed.terms);
      if (!plain) return [];
      try {
        return this.#ranked(request, plain, parsed.terms, upto, offset, limit);
      } catch {
        return [];
      }
    }
  }

  #ranked(
    request: SearchRequest,
    match: string,
    terms: QueryTerm[],
    upto: number,
    offset: number,
    limit: number,
  ): SearchHit[] {
    if (offset >= RANKED_WINDOW) return [];
    // What a person typed is matched in the text only; the filters go through the tags column, so FTS5
    // intersects them with the words instead of reading every match's columns (then checked exactly).
    let full = `body : (${match})`;
    const filters: string[] = [];
    const args: (string | number)[] = [];
    if (request.sessionId !== undefined) {
      full += ` AND tags : ${quoteTag(request.sessionId)}`;
      filters.push("sessionId = ?");
      args.push(request.sessionId);
    }
    if (request.type === "prompt") full += " AND tags : kprompt";
    else if (request.type === "message") full += " AND tags : (kprompt OR kmessage)";
    else if (request.type === "tool") full += " AND tags : ktool";
    const where = filters.map((f) => ` AND ${f}`).join("");
    args.unshift(full, upto);
    const rows = this.#prepared(
      `SELECT id, sessionId, seq, ts, kind, role, toolName FROM (
         SELECT rowid AS id, sessionId, seq, ts, kind, role, toolName, bm25(search_fts) AS r FROM search_fts
         WHERE search_fts MATCH ? AND rowid <= ?${where} ORDER BY rowid DESC LIMIT ${RANKED_WINDOW})
       ORDER BY r, id DESC LIMIT ? OFFSET ?`,
    ).all(...args, limit, offset) as unknown as HitRow[];
    return rows.map((row) => this.#hit(row, terms));
  }

  #hit(row: HitRow, terms: QueryTerm[]): SearchHit {
    const hit: SearchHit = {
      sessionId: row.sessionId,
      seq: row.seq,
      ts: row.ts,
      type: row.kind,
      snippet: makeSnippet(this.#bodyOf(row), terms),
    };
    if (row.role) hit.role = row.role;
    if (row.toolName) hit.toolName = row.toolName;
    return hit;
  }

  /** The indexed text of a hit, read back from its event (or its session's row). */
  #bodyOf(row: HitRow): string {
    if (row.id < 0) {
      const s = this.#prepared("SELECT info FROM sessions WHERE rowid = ?").get(-row.id) as
        | { info: string }
        | undefined;
      return s ? sessionText(JSON.parse(s.info)) : "";
    }
    const e = this.#prepared("SELECT type, payload FROM events WHERE rowid = ?").get(row.id) as
      | { type: string; payload: string }
      | undefined;
    return e ? docOf({ ...JSON.parse(e.payload), type: e.type })?.body ?? "" : "";
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

/** The indexed tags of a row: its session id and its kind (`kprompt`), for filters that FTS5 itself applies. */
function tagsOf(sessionId: string, kind: SearchKind): string {
  return `k${kind} ${sessionId}`;
}

/** A session id as a phrase of the tags column (its tokens in order; the exact id is checked after). */
function quoteTag(sessionId: string): string {
  return `"${sessionId.replaceAll('"', '""')}"`;
}

/** Whether a row of `kind` passes the `type` filter. */
function kindWanted(kind: SearchKind, filter: SearchRequest["type"]): boolean {
  if (filter === undefined) return true;
  if (filter === "message") return kind === "prompt" || kind === "message";
  return kind === filter;
}

function plainMatch(terms: QueryTerm[]): string | null {
  const words = terms.filter((t) => !t.exclude).flatMap((t) => t.text.match(/[\p{L}\p{N}]+/gu) ?? []);
  return words.length ? words.map((w) => `"${w}"`).join(" AND ") : null;
}

/**
 * Where a page starts: the events as they were at the first page (`top`, and `upto` indexed), the highest
 * rowid of the unindexed ones not yet read (`tail`; `upto` once they all were), and how many of the index's
 * hits were shown.
 */
interface Cursor {
  top: number;
  upto: number;
  tail: number;
  offset: number;
}

function encodeCursor(cursor: Cursor): string {
  return btoa(`${cursor.top}:${cursor.upto}:${cursor.tail}:${cursor.offset}`).replaceAll("=", "");
}

/** @throws {InvalidError} when the text is not a cursor this index made. */
function decodeCursor(text: string): Cursor {
  let plain = "";
  try {
    plain = atob(text);
  } catch {
    // Not base64: reported below.
  }
  const match = /^(\d{1,15}):(\d{1,15}):(\d{1,15}):(\d{1,6})$/.exec(plain);
  if (!match || Number(match[4]) >= RANKED_WINDOW) {
    throw new InvalidError("before: not a cursor of this search");
  }
  return { top: Number(match[1]), upto: Number(match[2]), tail: Number(match[3]), offset: Number(match[4]) };
}
