/** Transport 2 of the protocol: REST bodies, queries and answers, spawn jobs and the GitLab shapes. */
import { z } from "zod";
import { BOOTSTRAP_NAME, FieldMax, MAX_PROMPT_CHARS, type Role, ROLES } from "../wire.ts";
import { NotifyKind } from "../notify/kinds.ts";
import { isSecret } from "../webhooks/secret_format.ts";
import {
  AskSet,
  BudgetOnReach,
  EVENTS_PAGE_DEFAULT,
  EVENTS_PAGE_MAX,
  type MergeRequestState,
  SessionInfo,
  type SessionMergeRequest,
  type Spent,
  ThinkingLevel,
} from "./shapes.ts";
import { ApprovalDecision, DeliverAs, PromptImage } from "./plugin.ts";

// ---------------------------------------------------------------------------------------------
// REST (Transport 2)

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
/** Any JSON body: read first, checked against its schema after a size rule that depends on the content. */
export const JsonBody = z.unknown();

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

export const PolicyBody = z.object({ ask: AskSet });
/** `PUT /api/sessions/:id/budget`: dollars and/or input+output tokens; `{}` removes the budget. */
export const BudgetBody = z.strictObject({
  maxCost: z.number().positive().max(1_000_000).optional(),
  maxTokens: z.number().int().positive().max(1e12).optional(),
  onReach: BudgetOnReach.default("ask"),
}).transform((b) => (b.maxCost === undefined && b.maxTokens === undefined ? null : b));
export type BudgetBody = z.infer<typeof BudgetBody>;
/** A session's budget as set (the size of one approval) and in force (raised by approvals). */
export interface SessionBudget {
  maxCost?: number;
  maxTokens?: number;
  onReach: BudgetOnReach;
  /** The limits now: the set ones plus every approved raise. */
  current: { maxCost?: number; maxTokens?: number };
  /** Where the budget came from: set on the session, or a default (`LVMH_SPAWN_BUDGET`, `LVMH_BUDGET`). */
  source: "session" | "spawn" | "default";
}
/** What the list and the session page show of a budget: spent of the limits, `used` the larger share. */
export interface BudgetGlance {
  spent: Spent;
  limits: { maxCost?: number; maxTokens?: number };
  onReach: BudgetOnReach;
  used: number;
}
/** `GET`/`PUT /api/sessions/:id/budget`: the budget (null: none), what was spent, and whether it is reached. */
export interface BudgetView {
  budget: SessionBudget | null;
  spent: Spent;
  /** Why prompts are refused now (`budget reached`, `daily budget reached`), or null. */
  reached: string | null;
  /** The deployment-wide daily cap (`LVMH_DAILY_BUDGET`) and what today cost, when one is set. */
  daily?: { maxCost?: number; maxTokens?: number; spent: Spent };
}
export const DecisionBody = z.object({
  decision: ApprovalDecision,
  reason: z.string().trim().max(2000).optional(),
});
export type DecisionBody = z.infer<typeof DecisionBody>;
export const ApprovalState = z.enum(["pending", "approved", "rejected", "cancelled", "expired"]);
export type ApprovalState = z.infer<typeof ApprovalState>;
export const ApprovalsQuery = z.object({ state: ApprovalState.optional() });

/** One tool call waiting for (or answered by) a person, as the REST API and `approvals` frames report it. */
export interface Approval {
  id: string;
  sessionId: string;
  toolCallId: string;
  toolName: string;
  args: unknown;
  state: ApprovalState;
  createdAt: number;
  decidedBy: string | null;
  decidedAt: number | null;
  reason: string | null;
  /** When the plugin reported the answer applied (`approval_resolved`): "delivered to the agent". */
  appliedAt: number | null;
  /** `budget`: the session's budget was reached and approving raises it; absent for a tool call. */
  kind?: "budget";
}

/** A persisted (or live) event as the REST API and `/ws` deliver it: envelope plus payload. */
export type StoredEvent =
  & { sessionId: string; seq: number; ts: number; type: string }
  & Record<string, unknown>;

// ---------------------------------------------------------------------------------------------
// Spawn and GitLab (Transport 2)

const segment = "[A-Za-z0-9_][A-Za-z0-9_.-]*";
/** A GitLab project path: `group/project` or `group/sub/project`; nothing a shell or URL could misread. */
export const RepoPath = z.string()
  .max(255, "repo path is too long")
  .regex(new RegExp(`^${segment}(?:/${segment}){1,19}$`), "repo must look like group/subgroup/project")
  .refine((s) => !s.split("/").some((part) => part.includes("..") || part.endsWith(".")), {
    message: "repo path segments must not contain '..' or end with '.'",
  });
/** A git branch name, restricted to the characters git allows without quoting. */
export const BranchName = z.string()
  .max(200, "branch name is too long")
  .regex(/^[A-Za-z0-9_][A-Za-z0-9_./-]*$/, "branch may hold letters, digits, '_', '.', '/', '-'")
  .refine((s) => !s.includes("..") && !s.includes("//") && !s.endsWith("/") && !s.endsWith(".lock"), {
    message: "branch is not a valid git ref name",
  });
export const SpawnBody = z.object({
  repo: RepoPath,
  branch: BranchName.optional(),
  ask: AskSet.optional(),
  /** The spawned session's budget (`LVMH_SPAWN_BUDGET` without one). */
  budget: BudgetBody.optional(),
});
export type SpawnBody = z.infer<typeof SpawnBody>;
/** A project as `GET /api/gitlab/repos` returns it. */
export interface GitlabRepo {
  path: string;
  name: string;
  namespace: string;
  lastActivityAt: string | null;
  webUrl: string;
  defaultBranch: string | null;
}

/** What `GET /api/gitlab/status` returns; never the token. */
export interface GitlabStatus {
  connected: boolean;
  baseUrl: string;
  username?: string;
}

/** `POST /api/spawn`'s 201 answer. */
export interface SpawnResult {
  sessionId: string;
  jobId: string;
  containerId: string;
}

/** A named token as `GET /api/tokens` lists it: never its value, never its hash. */
export interface TokenInfo {
  name: string;
  role: Role;
  createdAt: number;
  lastUsedAt: number | null;
  revokedAt: number | null;
}

/** One audit row, as `GET /api/audit` pages them. */
export interface AuditEntry {
  id: number;
  at: number;
  actor: string;
  role: Role | null;
  action: string;
  sessionId: string | null;
  detail: unknown;
}

/** A registered webhook endpoint; its `secret` is returned once, by `POST /api/webhooks`. */
export interface EndpointRecord {
  id: string;
  url: string;
  events: NotifyKind[];
  secret: string;
  createdAt: number;
}

/** One delivery attempt, as `GET /api/webhooks/:id/deliveries` reports it. */
export interface AttemptRow {
  deliveryId: string;
  type: string;
  at: number;
  /** HTTP status, or null when no response came (timeout, refused). */
  status: number | null;
  latencyMs: number;
  error: string | null;
  /** The delivery's state now: pending (will retry), delivered or failed. */
  state: string;
}

/** An endpoint as `GET /api/webhooks` lists it: no secret, and its latest attempt (null before any). */
export type Endpoint = Omit<EndpointRecord, "secret"> & { last: AttemptRow | null };

export const GitlabConnectBody = z.object({
  token: z.string().trim().min(8, "token is too short").max(512).regex(
    /^[\x21-\x7e]+$/,
    "token has invalid characters",
  ),
});

// ---------------------------------------------------------------------------------------------
// Tokens, the audit log, notifications (Transport 2)

/** A named token's name: never the bootstrap token's. */
export const TokenName = z.string().regex(
  /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/,
  "name: 1-64 letters, digits, '.', '_' or '-'",
).refine((n) => n !== BOOTSTRAP_NAME, { message: `"${BOOTSTRAP_NAME}" is the bootstrap token's name` });
export const RoleName = z.enum(ROLES);
/** `POST /api/tokens` (and `deno task token add`). */
export const TokenBody = z.object({ name: TokenName, role: RoleName });

/** `GET /api/audit`: a page of rows after the id `after`, oldest first. */
export const AuditQuery = z.object({
  after: z.coerce.number().int().nonnegative().default(0),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});

const b64url = z.string().regex(/^[A-Za-z0-9_-]+={0,2}$/, "must be base64url").max(200);
/** `POST /api/push/subscriptions`: what `PushSubscription.toJSON()` gives, and the kinds wanted. */
export const PushSubscribeBody = z.object({
  subscription: z.object({
    endpoint: z.url({ protocol: /^https?$/ }).max(2000),
    keys: z.object({ p256dh: b64url, auth: b64url }),
  }),
  kinds: z.array(NotifyKind).max(20),
});
export type PushSubscribeBody = z.infer<typeof PushSubscribeBody>;
/** `GET` and `DELETE /api/push/subscriptions?endpoint=`: which browser's subscription. */
export const PushEndpointQuery = z.object({ endpoint: z.string().min(1).max(2000) });
/** `POST /api/push/visible`: the page of this browser is shown (or hidden). */
export const PushVisibleBody = z.object({ endpoint: z.string().max(2000), visible: z.boolean() });

/** `POST /api/webhooks`: an outbound endpoint, the kinds it gets, and optionally its own secret. */
export const EndpointBody = z.object({
  url: z.url({ protocol: /^https?$/ }).max(2000),
  events: z.array(NotifyKind).min(1).max(20),
  secret: z.string().refine(isSecret, "secret must be whsec_ and 24 to 64 base64 bytes").optional(),
});
export type EndpointBody = z.infer<typeof EndpointBody>;

/** `POST /login`: the daemon token, exchanged for the HttpOnly page cookie (web UI). */
export const LoginBody = z.object({ token: z.string().min(1, "token is required").max(1024) });

export type SpawnState = "queued" | "cloning" | "building" | "starting" | "running" | "failed" | "stopped";
/** One spawn job as `GET /api/spawn/status` and `spawn_status` frames report it. */
export interface SpawnJob {
  id: string;
  repo: string;
  branch: string | null;
  state: SpawnState;
  sessionId: string;
  containerId: string | null;
  error: string | null;
  createdAt: number;
  updatedAt: number;
}

/** `GET /api/sessions/:id/changes?scope=`: the working tree against the session's base, or against HEAD. */
export const ChangesQuery = z.object({ scope: z.enum(["all", "uncommitted"]).default("all") });
/** `GET /api/sessions/:id/changes/file?path=&scope=`: one changed file with its whole diff. */
export const ChangesFileQuery = z.object({
  path: z.string().min(1).max(4096),
  scope: z.enum(["all", "uncommitted"]).default("all"),
});
/** The answers of those two routes (lib/changes/types.ts, shared with the plugin). */
export type { ChangeCommit, ChangedFile, Changes, ChangeScope } from "../changes/types.ts";

/** `POST /api/sessions/:id/merge-request`: push the session's work and open or update its merge request. */
export const MergeRequestBody = z.object({
  title: z.string().trim().min(1, "title is required").max(255),
  description: z.string().max(100_000).optional(),
  targetBranch: BranchName.optional(),
  draft: z.boolean().optional(),
  /** Push even when an added line looks like a secret: admins only. */
  allowSecrets: z.boolean().optional(),
});

/** `GET /api/sessions/:id/merge-request`: lvmh's record of the session's merge request, followed on GitLab. */
export interface MergeRequestView {
  iid: number;
  webUrl: string;
  state: MergeRequestState;
  sourceBranch: string;
  targetBranch: string;
  /** The head lvmh last pushed to the source branch. */
  sha: string;
  title: string;
  /** The latest pipeline of the merge request, as GitLab reported it. */
  pipeline: { id: number; status: string; webUrl: string } | null;
  /** GitLab's `detailed_merge_status` (or `merge_status`), e.g. `mergeable`, `ci_still_running`. */
  mergeStatus: string | null;
  /** How many notes people wrote on it (GitLab's system notes left out). */
  notes: number;
  /** When lvmh's record last changed (ms). */
  updatedAt: number;
}

/** One review comment of a merge request: a person's note, or an inline one on a line of the diff. */
export interface MergeRequestComment {
  /** GitLab's note id. */
  id: number;
  /** The author's username. */
  author: string;
  /** The note as written: untrusted text, never markup. */
  body: string;
  /** GitLab's `created_at` (ISO 8601). */
  createdAt: string;
  /** Inline comments: the file (its new path), the line (new side; the old side for a removed line). */
  path?: string;
  line?: number;
  /** Inline comments: the lines of the file's diff around `line`, when lvmh could read them. */
  diffHunk?: string;
}
/** `GET /api/sessions/:id/merge-request/comments`: the human and inline notes, oldest first. */
export interface MergeRequestComments {
  comments: MergeRequestComment[];
}
/** `POST /api/sessions/:id/merge-request/comments/send`: the picked comments go to the agent as one follow-up. */
export const MergeRequestCommentsSendBody = z.object({
  ids: z.array(z.number().int().positive()).min(1, "pick at least one comment").max(100),
  /** A person's own words, put before the comments. */
  note: z.string().trim().max(10_000).optional(),
});
export type MergeRequestCommentsSendBody = z.infer<typeof MergeRequestCommentsSendBody>;
/** That route's answer: the follow-up's prompt id, which its `command_result` names too. */
export interface MergeRequestCommentsSendResult {
  ok: true;
  promptId: string;
}
