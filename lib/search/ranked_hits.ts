/**
 * The index's own hits: FTS5 matches ranked by bm25 among the newest `RANKED_WINDOW`, each shown with a
 * snippet made from its event (the index keeps no copy of the text). A person's query never becomes a 500:
 * should FTS5 refuse the quoted query, the words alone are searched, and failing that nothing is found.
 */
import { docOf, sessionText } from "./extract.ts";
import type { QueryTerm } from "./query.ts";
import { makeSnippet } from "./snippet.ts";
import { kindTags, quoteTag } from "./tags.ts";
import type { Prepared } from "./event_rows.ts";
import type { SearchHit, SearchKind, SearchRequest } from "./types.ts";

/**
 * Matches ranked per query: the newest this many, by bm25. A word in half of a million events would otherwise
 * rank every one of them for each page; a person reviewing agent work wants the recent ones first anyway.
 * 500 rather than 2,000: a phrase of two common words at 1,000,000 events went from p50 82 to 61 ms.
 */
export const RANKED_WINDOW = 500;

interface HitRow {
  id: number;
  sessionId: string;
  seq: number;
  ts: number;
  kind: SearchKind;
  role: string | null;
  toolName: string | null;
}

/** Ranked hits from the index among rowids up to `upto` (the session rows included). */
export function indexedHits(
  prepared: Prepared,
  request: SearchRequest,
  parsed: { match: string | null; terms: QueryTerm[] },
  upto: number,
  offset: number,
  limit: number,
): SearchHit[] {
  try {
    return ranked(prepared, request, parsed.match!, parsed.terms, upto, offset, limit);
  } catch {
    // The quoting in lib/search/query.ts leaves FTS5 nothing to refuse; should it refuse anyway, the words
    // alone are searched, and failing that nothing is found: a person's query never becomes a 500.
    const plain = plainMatch(parsed.terms);
    if (!plain) return [];
    try {
      return ranked(prepared, request, plain, parsed.terms, upto, offset, limit);
    } catch {
      return [];
    }
  }
}

function ranked(
  prepared: Prepared,
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
  full += kindTags(request.type);
  const where = filters.map((f) => ` AND ${f}`).join("");
  args.unshift(full, upto);
  const rows = prepared(
    `SELECT id, sessionId, seq, ts, kind, role, toolName FROM (
         SELECT rowid AS id, sessionId, seq, ts, kind, role, toolName, bm25(search_fts) AS r FROM search_fts
         WHERE search_fts MATCH ? AND rowid <= ?${where} ORDER BY rowid DESC LIMIT ${RANKED_WINDOW})
       ORDER BY r, id DESC LIMIT ? OFFSET ?`,
  ).all(...args, limit, offset) as unknown as HitRow[];
  return rows.map((row) => hitOf(prepared, row, terms));
}

function hitOf(prepared: Prepared, row: HitRow, terms: QueryTerm[]): SearchHit {
  const hit: SearchHit = {
    sessionId: row.sessionId,
    seq: row.seq,
    ts: row.ts,
    type: row.kind,
    snippet: makeSnippet(bodyOf(prepared, row), terms),
  };
  if (row.role) hit.role = row.role;
  if (row.toolName) hit.toolName = row.toolName;
  return hit;
}

/** The indexed text of a hit, read back from its event (or its session's row). */
function bodyOf(prepared: Prepared, row: HitRow): string {
  if (row.id < 0) {
    const s = prepared("SELECT info FROM sessions WHERE rowid = ?").get(-row.id) as
      | { info: string }
      | undefined;
    return s ? sessionText(JSON.parse(s.info)) : "";
  }
  const e = prepared("SELECT type, payload FROM events WHERE rowid = ?").get(row.id) as
    | { type: string; payload: string }
    | undefined;
  return e ? docOf({ ...JSON.parse(e.payload), type: e.type })?.body ?? "" : "";
}

function plainMatch(terms: QueryTerm[]): string | null {
  const words = terms.filter((t) => !t.exclude).flatMap((t) => t.text.match(/[\p{L}\p{N}]+/gu) ?? []);
  return words.length ? words.map((w) => `"${w}"`).join(" AND ") : null;
}
