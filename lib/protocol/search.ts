/** Transport 2, finding and reviewing: `GET /api/search`, a session's runs and its export. */
import { z } from "zod";
import { SessionId } from "./shapes.ts";

/** Characters of `q` taken: far more than anyone types; the parser keeps its first 32 terms anyway. */
export const SEARCH_Q_MAX = 20_000;

/** What a hit is: a user's prompt, an assistant's message, a tool call or result, or a session's own names. */
export type SearchKind = "prompt" | "message" | "tool" | "session";

/** `GET /api/search`'s query; `before` is the `next` of the previous page. */
export const SearchQuery = z.object({
  q: z.string().max(SEARCH_Q_MAX, `q: at most ${SEARCH_Q_MAX} characters`),
  sessionId: SessionId.optional(),
  /** `message`: prompts and answers; `prompt`: prompts only; `tool`: calls and results. */
  type: z.enum(["message", "tool", "prompt"]).optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  before: z.string().min(1).max(200).optional(),
});
export type SearchQuery = z.infer<typeof SearchQuery>;

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

/** `GET /api/search`'s answer: hits best first; `next` (passed as `before`) fetches the following page. */
export interface SearchPage {
  hits: SearchHit[];
  next?: string;
}

/** Where a run's prompt came from. */
export type RunSource = "web" | "terminal" | "hook" | "cli";
/** How a run ended (or that it has not). */
export type RunState = "running" | "done" | "failed" | "aborted";

/** One run of a session: what happened between one `agent_start` and its `agent_end`. */
export interface RunSummary {
  runId: string;
  startSeq: number;
  endSeq: number | null;
  startedAt: number;
  endedAt: number | null;
  prompt: { text: string; by: string | null; source: RunSource } | null;
  state: RunState;
  usage: { inputTokens: number; outputTokens: number; totalCost: number };
  tools: Record<string, number>;
  approvals: { asked: number; rejected: number };
  error?: string;
}

/** `GET /api/sessions/:id/runs`: newest first, runs starting below `before` (a seq). */
export const RunsQuery = z.object({
  before: z.coerce.number().int().nonnegative().optional(),
  limit: z.coerce.number().int().min(1).max(500).default(100),
});
export type RunsQuery = z.infer<typeof RunsQuery>;

/** `GET /api/sessions/:id/export`. */
export const ExportQuery = z.object({ format: z.enum(["md", "jsonl", "html"]).default("md") });
export type ExportFormat = z.infer<typeof ExportQuery>["format"];
