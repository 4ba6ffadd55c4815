/**
 * The search index of the SQLite store: FTS5 over the searchable text of each event (lib/search/extract.ts).
 * `search_docs` holds one row per searchable event (and one per session, at seq 0) with its text; `search_fts`
 * indexes that text as an external-content table, kept in step by triggers. The store writes documents in
 * the transaction that stores their events, so a hit is findable as soon as its event is readable, and a
 * crash leaves both or neither.
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import { InvalidError } from "../errors.ts";
import { docOf, MARK_CLOSE, MARK_OPEN, type SearchDoc, sessionText } from "./extract.ts";
import { parseQuery, type QueryTerm } from "./query.ts";
import type { SearchHit, SearchIndex, SearchKind, SearchPage, SearchRequest } from "./types.ts";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS search_docs(
  id INTEGER PRIMARY KEY, sessionId TEXT NOT NULL, seq INTEGER NOT NULL, ts INTEGER NOT NULL,
  kind TEXT NOT NULL, role TEXT, toolName TEXT, body TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS search_docs_session ON search_docs(sessionId, seq);
CREATE VIRTUAL TABLE IF NOT EXISTS search_fts USING fts5(
  body, content='search_docs', content_rowid='id', tokenize='unicode61 remove_diacritics 2');
CREATE TRIGGER IF NOT EXISTS search_docs_ai AFTER INSERT ON search_docs BEGIN
  INSERT INTO search_fts(rowid, body) VALUES (new.id, new.body);
END;
CREATE TRIGGER IF NOT EXISTS search_docs_ad AFTER DELETE ON search_docs BEGIN
  INSERT INTO search_fts(search_fts, rowid, body) VALUES ('delete', old.id, old.body);
END;
CREATE TABLE IF NOT EXISTS search_meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL);
`;

/**
 * Matches ranked per query: the newest this many, by bm25. A word in half of a million events would otherwise
 * rank every one of them for each page; a person reviewing agent work wants the recent ones first anyway.
 */
export const RANKED_WINDOW = 2000;
/** Tokens of text around the matches in a snippet. */
const SNIPPET_TOKENS = 24;

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

interface DocRow {
  id: number;
  sessionId: string;
  seq: number;
  ts: number;
  kind: SearchKind;
  role: string | null;
  toolName: string | null;
  snip: string;
}

/** The SQLite store's search index (it shares the store's connection and transactions). */
export class SqliteSearch implements SearchIndex {
  #db: DatabaseSync;
  #insert: StatementSync;
  #statements = new Map<string, StatementSync>();

  /**
   * Create the index's tables when missing. A database that had events before the index existed is marked
   * for indexing (`backfillStep`); its sessions are indexed at once (one row each).
   */
  constructor(db: DatabaseSync) {
    this.#db = db;
    const existed = db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'search_docs'").get() !== undefined;
    db.exec(SCHEMA);
    this.#insert = db.prepare(
      "INSERT INTO search_docs(sessionId, seq, ts, kind, role, toolName, body) VALUES (?, ?, ?, ?, ?, ?, ?)",
    );
    if (existed) return;
    db.exec("BEGIN IMMEDIATE");
    try {
      const end = (db.prepare("SELECT max(rowid) AS m FROM events").get() as { m: number | null }).m ?? 0;
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

  /** Index the searchable text of stored events; called inside the transaction that inserts them. */
  addEvents(events: readonly IndexedEvent[]): void {
    for (const event of events) {
      const doc = docOf(event as IndexedEvent & Record<string, unknown>);
      if (doc) this.#add(event, doc);
    }
  }

  #add(event: IndexedEvent, doc: SearchDoc): void {
    this.#insert.run(
      event.sessionId,
      event.seq,
      Math.trunc(event.ts),
      doc.kind,
      doc.role,
      doc.toolName,
      doc.body,
    );
  }

  /** Index (or index again) a session's name, title, cwd and repo; called inside the store's write. */
  setSession(id: string, info: Record<string, unknown>): void {
    this.#prepared("DELETE FROM search_docs WHERE sessionId = ? AND seq = 0 AND kind = 'session'").run(id);
    const body = sessionText(info);
    if (!body) return;
    const ts = typeof info.startedAt === "number" ? info.startedAt : 0;
    this.#insert.run(id, 0, ts, "session", null, null, body);
  }

  /** Remove everything of a session; called inside the transaction that deletes it. */
  removeSession(id: string): void {
    this.#prepared("DELETE FROM search_docs WHERE sessionId = ?").run(id);
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
    const have = this.#prepared(
      "SELECT 1 FROM search_docs WHERE sessionId = ? AND seq = ? AND kind != 'session' LIMIT 1",
    );
    for (const row of page) {
      const doc = docOf({ ...JSON.parse(row.payload), type: row.type });
      // A row stored after the index existed can take a rowid below `end` (when the highest rows were deleted
      // in between): it was indexed with its transaction.
      if (doc && have.get(row.sessionId, row.seq) === undefined) this.#add(row, doc);
    }
    const next = page.length < rows ? state.end : page[page.length - 1].rowid;
    this.#setMeta("backfill_next", next);
    return next >= state.end ? null : { next, end: state.end };
  }

  search(request: SearchRequest): SearchPage {
    const parsed = parseQuery(request.q);
    if (!parsed.match) return { hits: [] };
    const cursor = request.cursor === undefined ? null : decodeCursor(request.cursor);
    const max = cursor?.max ??
      (this.#prepared("SELECT max(id) AS m FROM search_docs").get() as { m: number | null }).m ?? 0;
    const offset = cursor?.offset ?? 0;
    try {
      return this.#search(request, parsed.match, max, offset);
    } catch {
      // The quoting in lib/search/query.ts leaves FTS5 nothing to refuse; should it refuse anyway, the words
      // alone are searched, and failing that nothing is found: a person's query never becomes a 500.
      const plain = plainMatch(parsed.terms);
      if (!plain) return { hits: [] };
      try {
        return this.#search(request, plain, max, offset);
      } catch {
        return { hits: [] };
      }
    }
  }

  #search(request: SearchRequest, match: string, max: number, offset: number): SearchPage {
    const filters: string[] = [];
    const args: (string | number)[] = [match, max];
    if (request.sessionId !== undefined) {
      filters.push("d.sessionId = ?");
      args.push(request.sessionId);
    }
    if (request.type === "prompt") filters.push("d.kind = 'prompt'");
    else if (request.type === "message") filters.push("d.kind IN ('prompt', 'message')");
    else if (request.type === "tool") filters.push("d.kind = 'tool'");
    const join = filters.length ? "JOIN search_docs d ON d.id = f.rowid" : "";
    const where = filters.map((f) => ` AND ${f}`).join("");
    const ids = this.#prepared(
      `SELECT id FROM (SELECT f.rowid AS id, bm25(search_fts) AS r FROM search_fts f ${join}
        WHERE search_fts MATCH ? AND f.rowid <= ?${where} ORDER BY f.rowid DESC LIMIT ${RANKED_WINDOW})
       ORDER BY r, id DESC LIMIT ? OFFSET ?`,
    ).all(...args, request.limit + 1, offset) as { id: number }[];
    const more = ids.length > request.limit;
    const page = ids.slice(0, request.limit).map((r) => r.id);
    if (!page.length) return { hits: [] };
    const rows = this.#prepared(
      `SELECT d.id, d.sessionId, d.seq, d.ts, d.kind, d.role, d.toolName,
         snippet(search_fts, 0, '${MARK_OPEN}', '${MARK_CLOSE}', '…', ${SNIPPET_TOKENS}) AS snip
       FROM search_fts f JOIN search_docs d ON d.id = f.rowid
       WHERE search_fts MATCH ? AND f.rowid IN (SELECT value FROM json_each(?))`,
    ).all(match, JSON.stringify(page)) as unknown as DocRow[];
    const byId = new Map(rows.map((r) => [r.id, r]));
    const hits = page.flatMap((id) => {
      const row = byId.get(id);
      return row ? [hitOf(row)] : [];
    });
    const next = more && offset + request.limit < RANKED_WINDOW
      ? encodeCursor({ max, offset: offset + request.limit })
      : undefined;
    return next ? { hits, next } : { hits };
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
 * A snippet as the API gives it: `«` and `»` around matches and nowhere else (the text's own become `‹ ›`, so
 * a highlight is always lvmh's).
 */
export function markSnippet(raw: string): string {
  return raw.replaceAll("«", "‹").replaceAll("»", "›").replaceAll(MARK_OPEN, "«").replaceAll(MARK_CLOSE, "»");
}

function hitOf(row: DocRow): SearchHit {
  const hit: SearchHit = {
    sessionId: row.sessionId,
    seq: row.seq,
    ts: row.ts,
    type: row.kind,
    snippet: markSnippet(row.snip ?? ""),
  };
  if (row.role) hit.role = row.role;
  if (row.toolName) hit.toolName = row.toolName;
  return hit;
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
