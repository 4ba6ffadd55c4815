/**
 * The interface every event store's search index implements (SQLite FTS5 here; a PostgreSQL store would
 * answer the same with tsvector and trigram indexes). The wire shapes are the protocol's.
 */
import type { SearchPage } from "../protocol/search.ts";

export type { SearchHit, SearchKind, SearchPage } from "../protocol/search.ts";

/** The `type` filter of `GET /api/search`: `message` is prompts and answers, `prompt` prompts only. */
export type SearchFilter = "message" | "tool" | "prompt";

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

/** A search index over an event store. */
export interface SearchIndex {
  /**
   * Hits for a query, best first. A query with nothing searchable answers no hits.
   * @throws {InvalidError} for a cursor this index did not make.
   */
  search(request: SearchRequest): SearchPage;
}
