/**
 * The search index of the SQLite store: FTS5 over the searchable text of each event (lib/search/extract.ts).
 * The index keeps no copy of the text (contentless, with deletes): a row's id is its event's rowid in
 * `events` (a session's own names use minus its rowid in `sessions`), and beside the index it keeps only the
 * small columns a hit shows. A hit's snippet is made from the event itself (lib/search/snippet.ts). The store
 * writes rows in the transaction that stores their events, so a hit is findable as soon as its event is
 * readable, and a crash leaves both or neither.
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import { InvalidError } from "../errors.ts";
import { docOf, type SearchDoc, sessionText } from "./extract.ts";
import { parseQuery, type QueryTerm } from "./query.ts";
import { makeSnippet } from "./snippet.ts";
import type { SearchHit, SearchIndex, SearchKind, SearchPage, SearchRequest } from "./types.ts";

const SCHEMA = `
CREATE VIRTUAL TABLE IF NOT EXISTS search_fts USING fts5(
  body, tags, sessionId UNINDEXED, seq UNINDEXED, ts UNINDEXED, kind UNINDEXED, role UNINDEXED, toolName UNINDEXED,
  content='', contentless_delete=1, contentless_unindexed=1, tokenize='unicode61 remove_diacritics 2');
CREATE TABLE IF NOT EXISTS search_meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL);
`;
/** The index's layout: a file with another (or none recorded) has its index dropped and built again. */
const LAYOUT = 3;

/**
 * Matches ranked per query: the newest this many, by bm25. A word in half of a million events would otherwise
 * rank every one of them for each page; a person reviewing agent work wants the recent ones first anyway.
 */
export const RANKED_WINDOW = 2000;

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

/** Where indexing an existing database stands: event rowids up to `end` are indexed once `next` reaches it. */
export interface BackfillState {
  next: number;
  end: number;
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
   * Create the index when missing. A database that had events before the index existed is marked for
   * indexing (`backfillStep`); its sessions are indexed at once (one row each).
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
      const end = (db.prepare("SELECT max(rowid) AS m FROM events").get() as { m: number | null }).m ?? 0;
      this.#setMeta("layout", LAYOUT);
      this.#setMeta("backfill_next", 0);
      this.#setMeta("backfill_end", end);
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

  /** Index the searchable text of stored events; called inside the transaction that inserted them. */
  addEvents(events: readonly IndexedEvent[]): void {
    const found: { event: IndexedEvent; doc: SearchDoc }[] = [];
    for (const event of events) {
      const doc = docOf(event as IndexedEvent & Record<string, unknown>);
      if (doc) found.push({ event, doc });
    }
    if (!found.length) return;
    // Rowids by one range read per session of the batch, not one lookup per event.
    const rowids = new Map<string, Map<number, number>>();
    const bySession = Map.groupBy(found, (f) => f.event.sessionId);
    for (const [sessionId, group] of bySession) {
      let lo = Infinity;
      let hi = -Infinity;
      for (const { event } of group) (lo = Math.min(lo, event.seq), hi = Math.max(hi, event.seq));
      const rows = this.#rowidsOf.all(sessionId, lo, hi) as { seq: number; r: number }[];
      rowids.set(sessionId, new Map(rows.map((r) => [r.seq, r.r])));
    }
    const args: (string | number | null)[] = [];
    for (const { event, doc } of found) {
      const rowid = rowids.get(event.sessionId)?.get(event.seq);
      if (rowid === undefined) continue;
      args.push(
        rowid,
        doc.body,
        tagsOf(event.sessionId, doc.kind),
        event.sessionId,
        event.seq,
        Math.trunc(event.ts),
        doc.kind,
        doc.role,
        doc.toolName,
      );
      if (args.length === DOCS_PER_INSERT * DOC_COLUMNS) this.#insertMany.run(...args.splice(0));
    }
    for (let i = 0; i < args.length; i += DOC_COLUMNS) this.#insert.run(...args.slice(i, i + DOC_COLUMNS));
  }

  #add(rowid: number, event: IndexedEvent, doc: SearchDoc): void {
    this.#insert.run(
      rowid,
      doc.body,
      tagsOf(event.sessionId, doc.kind),
      event.sessionId,
      event.seq,
      Math.trunc(event.ts),
      doc.kind,
      doc.role,
      doc.toolName,
    );
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
    this.#prepared("DELETE FROM search_fts WHERE rowid IN (SELECT rowid FROM events WHERE sessionId = ?)")
      .run(id);
    const docid = this.#sessionDocid(id);
    if (docid !== null) this.#prepared("DELETE FROM search_fts WHERE rowid = ?").run(docid);
  }

  /** A session's own row: minus its rowid in `sessions` (events' rowids are positive). */
  #sessionDocid(id: string): number | null {
    const row = this.#prepared("SELECT rowid AS r FROM sessions WHERE id = ?").get(id) as
      | { r: number }
      | undefined;
    return row ? -row.r : null;
  }

  /** Indexing of events stored before the index existed: where it stands (null when there is none to do). */
  backfillState(): BackfillState | null {
    const next = this.#meta("backfill_next");
    const end = this.#meta("backfill_end");
    return next === null || end === null || next >= end ? null : { next, end };
  }

  /**
   * Index up to `rows` events stored before the index existed, in one transaction of the caller's.
   * @returns the state after this step (null once done).
   */
  backfillStep(rows: number): BackfillState | null {
    const state = this.backfillState();
    if (!state) return null;
    const page = this.#prepared(
      "SELECT rowid, sessionId, seq, ts, type, payload FROM events WHERE rowid > ? AND rowid <= ? ORDER BY rowid LIMIT ?",
    ).all(state.next, state.end, rows) as unknown as (IndexedEvent & { rowid: number; payload: string })[];
    const have = this.#prepared("SELECT 1 FROM search_fts WHERE rowid = ?");
    for (const row of page) {
      const doc = docOf({ ...JSON.parse(row.payload), type: row.type });
      // A row stored after the index existed can take a rowid below `end` (when the highest rows were deleted
      // in between): it was indexed with its transaction.
      if (doc && have.get(row.rowid) === undefined) this.#add(row.rowid, row, doc);
    }
    const next = page.length < rows ? state.end : page[page.length - 1].rowid;
    this.#setMeta("backfill_next", next);
    return next >= state.end ? null : { next, end: state.end };
  }

  search(request: SearchRequest): SearchPage {
    const parsed = parseQuery(request.q);
    if (!parsed.match) return { hits: [] };
    const cursor = request.cursor === undefined ? null : decodeCursor(request.cursor);
    const max = cursor?.max ?? Number.MAX_SAFE_INTEGER;
    const offset = cursor?.offset ?? 0;
    try {
      return this.#search(request, parsed.match, parsed.terms, max, offset);
    } catch {
      // The quoting in lib/search/query.ts leaves FTS5 nothing to refuse; should it refuse anyway, the words
      // alone are searched, and failing that nothing is found: a person's query never becomes a 500.
      const plain = plainMatch(parsed.terms);
      if (!plain) return { hits: [] };
      try {
        return this.#search(request, plain, parsed.terms, max, offset);
      } catch {
        return { hits: [] };
      }
    }
  }

  #search(
    request: SearchRequest,
    match: string,
    terms: QueryTerm[],
    max: number,
    offset: number,
  ): SearchPage {
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
    // Fixed at the first page: events stored while a person pages on do not shift the pages.
    const top = cursor(max) ??
      (this.#prepared("SELECT max(rowid) AS m FROM events").get() as { m: number | null })
        .m ??
      0;
    args.unshift(full, top);
    const rows = this.#prepared(
      `SELECT id, sessionId, seq, ts, kind, role, toolName FROM (
         SELECT rowid AS id, sessionId, seq, ts, kind, role, toolName, bm25(search_fts) AS r FROM search_fts
         WHERE search_fts MATCH ? AND rowid <= ?${where} ORDER BY rowid DESC LIMIT ${RANKED_WINDOW})
       ORDER BY r, id DESC LIMIT ? OFFSET ?`,
    ).all(...args, request.limit + 1, offset) as unknown as HitRow[];
    const more = rows.length > request.limit;
    const hits = rows.slice(0, request.limit).map((row) => this.#hit(row, terms));
    const next = more && offset + request.limit < RANKED_WINDOW
      ? encodeCursor({ max: top, offset: offset + request.limit })
      : undefined;
    return next ? { hits, next } : { hits };
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

/** The cursor's fixed top, or null on a first page. */
function cursor(max: number): number | null {
  return max === Number.MAX_SAFE_INTEGER ? null : max;
}

function plainMatch(terms: QueryTerm[]): string | null {
  const words = terms.filter((t) => !t.exclude).flatMap((t) => t.text.match(/[\p{L}\p{N}]+/gu) ?? []);
  return words.length ? words.map((w) => `"${w}"`).join(" AND ") : null;
}

interface Cursor {
  max: number;
  offset: number;
}

function encodeCursor(cursor: Cursor): string {
  return btoa(`${cursor.max}:${cursor.offset}`).replaceAll("=", "");
}

/** @throws {InvalidError} when the text is not a cursor this index made. */
function decodeCursor(text: string): Cursor {
  let plain = "";
  try {
    plain = atob(text);
  } catch {
    // Not base64: reported below.
  }
  const match = /^(\d{1,15}):(\d{1,6})$/.exec(plain);
  if (!match || Number(match[2]) >= RANKED_WINDOW) {
    throw new InvalidError("before: not a cursor of this search");
  }
  return { max: Number(match[1]), offset: Number(match[2]) };
}
