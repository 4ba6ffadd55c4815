/**
 * Hits among the events the index has not reached yet. Events are indexed behind ingest
 * (lib/search/sqlite_index.ts says why), so a search reads the newest events past the index itself and
 * matches them with the index's own rules (lib/search/match.ts): a hit is findable as soon as its event is
 * readable. This read is bounded, newest first, and narrowed by SQLite before any row is parsed.
 */
import { docOf } from "./extract.ts";
import type { QueryTerm } from "./query.ts";
import { makeSnippet } from "./snippet.ts";
import { textMatcher } from "./match.ts";
import { kindWanted } from "./tags.ts";
import type { EventRow, Prepared } from "./event_rows.ts";
import type { SearchHit, SearchRequest } from "./types.ts";

/**
 * The most events past the index a search reads itself (newest first). Ingest far ahead of the index (a flood,
 * or a large file met for the first time) leaves older unindexed events out until the indexer reaches them.
 */
export const MAX_UNINDEXED_SCAN = 20_000;
/** Rows read at a time of the events past the index. */
const UNINDEXED_PAGE = 128;

/**
 * Up to `want` hits among the events past the index (rowids in (`upto`, `tail`]), read and matched here,
 * newest first, each with its rowid (where the next page goes on). Reads in small pages and stops once it
 * has enough, so a common word costs a few rows; at most `MAX_UNINDEXED_SCAN` rows in all.
 */
export function unindexedHits(
  prepared: Prepared,
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
  const page = prepared(
    `SELECT rowid, sessionId, seq, ts, type, payload FROM events WHERE ${filters.join(" AND ")}
       ORDER BY rowid DESC LIMIT ${UNINDEXED_PAGE}`,
  );
  let below = tail;
  for (let scanned = 0; scanned < MAX_UNINDEXED_SCAN;) {
    const rows = page.all(upto, below, ...args) as unknown as EventRow[];
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
