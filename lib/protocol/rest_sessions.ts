/**
 * REST shapes of one session (Transport 2): prompting it, steering its wheel, its model and name, paging its
 * events, the list's summary of it, its worker and its changes. Kept apart from the other resources so each
 * route's body sits with the answers of the same routes.
 */
import { z } from "zod";
import { FieldMax, MAX_PROMPT_CHARS } from "../wire.ts";
import {
  AskSet,
  EVENTS_PAGE_DEFAULT,
  EVENTS_PAGE_MAX,
  SessionInfo,
  type SessionMergeRequest,
  ThinkingLevel,
} from "./shapes.ts";
import { DeliverAs, PromptImage } from "./plugin.ts";
import type { BudgetGlance } from "./rest_budgets.ts";

export const PromptBody = z.object({
  message: z.string().trim().min(1, "message must not be empty").max(MAX_PROMPT_CHARS),
  deliverAs: DeliverAs.default("steer"),
  /** Checked further (count, type, base64, magic bytes, sizes) by `checkImages` in `lib/images.ts`. */
  images: z.array(PromptImage).max(FieldMax.images).optional(),
  /** Send while someone else holds the session's wheel (audited as `wheel.override`). */
  force: z.boolean().optional(),
});
export type PromptBody = z.infer<typeof PromptBody>;
/** `POST /api/sessions/:id/abort`'s optional body. */
export const AbortBody = z.object({ force: z.boolean().optional() });
/** `POST /api/sessions/:id/wheel`: steer the session alone for this many minutes. */
export const WheelBody = z.object({ minutes: z.number().int().min(1).max(120) });
/** `POST /api/sessions/:id/prompt`'s answer: the prompt's id, which its `command_result` names too. */
export interface PromptResult {
  ok: true;
  promptId: string;
  commandId: string;
  /** The session's worker was stopped: it is resumed, and the prompt delivered once it is online and idle. */
  resumed?: true;
}

/** `PUT /api/sessions/:id/model`: one of the models the session reported. */
export const ModelBody = z.object({
  provider: z.string().trim().min(1, "provider is required").max(FieldMax.model),
  model: z.string().trim().min(1, "model is required").max(FieldMax.model),
  thinking: ThinkingLevel.optional(),
});
export type ModelBody = z.infer<typeof ModelBody>;
/** `PUT /api/sessions/:id/name`: the session's new name (pi's session name). */
export const NameBody = z.object({
  name: z.string().trim().min(1, "name must not be empty").max(FieldMax.newName).refine(
    (s) => [...s].every((c) => c >= " " && c !== "\x7f"),
    { message: "name must not contain control characters" },
  ),
});

export const seqParam = z.coerce.number().int().nonnegative();
export const EventsQuery = z.object({
  after: seqParam.default(0),
  before: seqParam.optional(),
  limit: z.coerce.number().int().min(1).max(EVENTS_PAGE_MAX).default(EVENTS_PAGE_DEFAULT),
});
export type EventsQuery = z.infer<typeof EventsQuery>;

/** A session as the store keeps it: the last snapshot plus what the event log says. */
export interface SessionRecord extends SessionInfo {
  /** "running" between agent_start and agent_end; "idle" otherwise. */
  state: "running" | "idle";
  lastSeq: number;
  lastEventAt: number | null;
}

/** A session as `GET /api/sessions`, `session_list` and `session_update` report it. */
export interface SessionSummary extends SessionRecord {
  online: boolean;
  /** The tools whose calls wait for a person in this session. */
  ask: AskSet;
  /** How many approvals of this session are pending. */
  waiting: number;
  /** pi's name, else the first prompt's first line (about 60 characters), else the cwd's last folder. */
  title: string;
  /** What the session does now, for the list (kept by `lib/session_glance.ts`, exact over the whole log). */
  activity: SessionActivity;
  /** Cost so far: the sum of every run's `usage.totalCost`. */
  cost: number;
  /** The latest event of any kind, streamed deltas included (ms); null before any. */
  lastActivityAt: number | null;
  /** The session's merge request, when it has one (spawned sessions that shipped their work). */
  mergeRequest?: SessionMergeRequest;
  /** The session's budget, when it has one: what was spent of it (`used` 1 = reached). */
  budget?: BudgetGlance;
  /** A spawned session's worker: starting, running, stopped (resumable) or crashed; null for a terminal one
   * (always present in answers; optional for summaries made elsewhere, as in tests). */
  container?: ContainerState | null;
  /** How a crashed worker ended (only when `container` is `crashed`). */
  exitCode?: number;
  /** Why a crashed worker ended: `"oom"`, `"exit 1"`, … (only when `container` is `crashed`). */
  reason?: string;
}

/** A spawned session's worker as `GET /api/sessions` reports it. */
export type ContainerState = "starting" | "running" | "stopped" | "crashed";
/** `GET /api/sessions/:id/container/logs?tail=`: how many of the worker's last lines (1 to 1,000). */
export const ContainerLogsQuery = z.object({ tail: z.coerce.number().int().min(1).max(1000).default(100) });
/** `POST /api/sessions/:id/resume`'s answer (202): the job that starts the new worker, and the worker. */
export interface ResumeResult {
  jobId: string;
  containerId: string;
}

/**
 * A session's state for the list: waiting (approvals pending), running, idle or offline; the tool that runs
 * (or waits for a person) and the last line of text (streamed now while running, else the last answer's).
 */
export interface SessionActivity {
  state: "waiting" | "running" | "idle" | "offline";
  tool?: string;
  line?: string;
}

/** A persisted (or live) event as the REST API and `/ws` deliver it: envelope plus payload. */
export type StoredEvent =
  & { sessionId: string; seq: number; ts: number; type: string }
  & Record<string, unknown>;

/** `GET /api/sessions/:id/changes?scope=`: the working tree against the session's base, or against HEAD. */
export const ChangesQuery = z.object({ scope: z.enum(["all", "uncommitted"]).default("all") });
/** `GET /api/sessions/:id/changes/file?path=&scope=`: one changed file with its whole diff. */
export const ChangesFileQuery = z.object({
  path: z.string().min(1).max(4096),
  scope: z.enum(["all", "uncommitted"]).default("all"),
});
/** The answers of those two routes (lib/changes/types.ts, shared with the plugin). */
export type { ChangeCommit, ChangedFile, Changes, ChangeScope } from "../changes/types.ts";
