/**
 * The index's `tags` column: each row's session id and kind (`kprompt`) as words, so that FTS5 itself
 * intersects a query's filters with its words instead of reading every match's columns. How a row's tags are
 * written and how a search names them must agree, so both are here.
 */
import type { SearchKind, SearchRequest } from "./types.ts";

/** The indexed tags of a row: its session id and its kind (`kprompt`), for filters that FTS5 itself applies. */
export function tagsOf(sessionId: string, kind: SearchKind): string {
  return `k${kind} ${sessionId}`;
}

/** A session id as a phrase of the tags column (its tokens in order; the exact id is checked after). */
export function quoteTag(sessionId: string): string {
  return `"${sessionId.replaceAll('"', '""')}"`;
}

/** The part of a MATCH that applies the `type` filter through the tags ("" without one). */
export function kindTags(filter: SearchRequest["type"]): string {
  if (filter === "prompt") return " AND tags : kprompt";
  if (filter === "message") return " AND tags : (kprompt OR kmessage)";
  if (filter === "tool") return " AND tags : ktool";
  return "";
}

/** Whether a row of `kind` passes the `type` filter (for rows read outside the index). */
export function kindWanted(kind: SearchKind, filter: SearchRequest["type"]): boolean {
  if (filter === undefined) return true;
  if (filter === "message") return kind === "prompt" || kind === "message";
  return kind === filter;
}
