/**
 * The search API's shapes, and the interface every event store's index implements (SQLite FTS5 here; a
 * PostgreSQL store would answer the same with tsvector and trigram indexes).
 */

/** What a hit is: a user's prompt, an assistant's message, a tool call or result, or a session's own names. */
export type SearchKind = "prompt" | "message" | "tool" | "session";
/** The `type` filter of `GET /api/search`: `message` is prompts and answers, `prompt` prompts only. */
export type SearchFilter = "message" | "tool" | "prompt";
export const SEARCH_FILTERS: readonly SearchFilter[] = ["message", "tool", "prompt"];

/** One request for hits. */
export interface SearchRequest {
  /** The query as typed (lib/search/query.ts). */
  q: string;
  sessionId?: string;
  type?: SearchFilter;
  /** 1–100. */
  limit: number;
  /** The `next` of the previous page. */
  cursor?: string;
}

/** One hit: an event (or, for `session`, the session itself at seq 0) and its text with `«…»` around matches. */
export interface SearchHit {
  sessionId: string;
  seq: number;
  ts: number;
  type: SearchKind;
  role?: string;
  toolName?: string;
  snippet: string;
}

/** A page of hits, best first; `next` fetches the following page. */
export interface SearchPage {
  hits: SearchHit[];
  next?: string;
}

/** A search index over an event store. */
export interface SearchIndex {
  /**
   * Hits for a query, best first. A query with nothing searchable answers no hits.
   * @throws {InvalidError} for a cursor this index did not make.
   */
  search(request: SearchRequest): SearchPage;
}
