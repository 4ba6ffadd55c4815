/**
 * The lvmh wire protocol, version 1: one zod schema per frame and body, one parse function per boundary.
 * PROTOCOL.md describes the same set of messages in prose; `protocol_doc_test.ts` keeps the two in step.
 * Types are inferred from the schemas and never written twice.
 */
import { z } from "zod";
import {
  FieldMax,
  MAX_BATCH_EVENTS,
  MAX_PROMPT_CHARS,
  PROTOCOL_VERSION,
  type Role,
  SESSION_ID_RE,
} from "./wire.ts";
import { hotShape, MAX_JSON_DEPTH, nestsDeeper } from "./frame_precheck.ts";
import type { NotifyKind } from "./notify/kinds.ts";

export { MAX_JSON_DEPTH, nestsDeeper } from "./frame_precheck.ts";
export {
  CloseCode,
  Feature,
  FieldMax,
  MAX_BATCH_EVENTS,
  MAX_BODY_BYTES,
  MAX_FRAME_BYTES,
  MAX_PROMPT_CHARS,
  PROTOCOL_VERSION,
  SESSION_ID_RE,
} from "./wire.ts";

/** `limit` of `GET /api/sessions/:id/events` when absent, and its cap. */
export const EVENTS_PAGE_DEFAULT = 1000;
export const EVENTS_PAGE_MAX = 1000;

export const SessionId = z.string().regex(SESSION_ID_RE, "not a valid session id");

// ---------------------------------------------------------------------------------------------
// Shared shapes

/** A model pi can use in a session, from its model registry; `hasAuth` says whether a key is configured. */
export const ModelEntry = z.looseObject({
  provider: z.string().min(1).max(FieldMax.model),
  id: z.string().min(1).max(FieldMax.model),
  name: z.string().max(FieldMax.model).default(""),
  /** What the model takes: `text`, and `image` for a model that sees images. */
  input: z.array(z.string().max(FieldMax.modelInput)).max(FieldMax.modelInputs).default(["text"]),
  hasAuth: z.boolean().default(false),
});
export type ModelEntry = z.infer<typeof ModelEntry>;
/** pi's thinking levels (1.6.0 adds `max`). */
export const ThinkingLevel = z.enum(["off", "minimal", "low", "medium", "high", "xhigh", "max"]);
export type ThinkingLevel = z.infer<typeof ThinkingLevel>;

/** The session snapshot a plugin sends in `hello` and `session_info`. Unknown fields are kept. */
export const SessionInfo = z.looseObject({
  id: SessionId,
  name: z.string().max(FieldMax.sessionName).nullable().default(null),
  cwd: z.string().max(FieldMax.cwd).default(""),
  model: z.string().max(FieldMax.model).nullable().default(null),
  provider: z.string().max(FieldMax.model).nullable().default(null),
  agent: z.boolean().default(false),
  repo: z.string().max(FieldMax.repo).nullable().default(null),
  startedAt: z.number().int().nonnegative(),
  /** The models the session may switch to (absent from older plugins: no switching). */
  models: z.array(ModelEntry).max(FieldMax.models).optional(),
  /** pi's thinking level, as it reports it. */
  thinkingLevel: z.string().max(FieldMax.thinkingLevel).nullable().optional(),
  /** When a model switch applies: from the next run (pi 0.73.1) or the next turn (1.6.0). */
  modelSwitch: z.enum(["next_run", "next_turn"]).optional(),
});
export type SessionInfo = z.infer<typeof SessionInfo>;

/** A tool name as pi reports it (`bash`, `edit`, an extension's tool). */
export const ToolName = z.string().regex(/^[A-Za-z0-9_.:-]{1,64}$/, "not a valid tool name");
/** The tools whose calls wait for a person: a list (empty = none) or every tool. */
export const AskSet = z.union([z.literal("all"), z.array(ToolName).max(200)]);
export type AskSet = z.infer<typeof AskSet>;

/**
 * An image of a user message, named by the sha256 of its bytes and never carried itself. `source: "web"`: the
 * daemon holds it (a web prompt's, served by `GET /api/sessions/:id/images/:sha256`); `"terminal"`: only pi has
 * it (pasted there).
 */
export const MessageImage = z.looseObject({
  type: z.literal("image"),
  mimeType: z.string().max(FieldMax.mimeType),
  sha256: z.string().regex(/^[0-9a-f]{64}$/, "sha256 must be 64 lowercase hex digits"),
  bytes: z.number().int().nonnegative(),
  source: z.enum(["web", "terminal"]).default("terminal"),
});
export type MessageImage = z.infer<typeof MessageImage>;

/** The message shape carried by `message_end`. */
export const Message = z.looseObject({
  role: z.enum(["user", "assistant", "toolResult", "system"]),
  id: z.string().max(FieldMax.messageId),
  text: z.string().default(""),
  thinking: z.string().nullable().default(null),
  toolCalls: z.array(z.looseObject({ id: z.string(), name: z.string(), argsJson: z.string() })).default([]),
  toolCallId: z.string().nullable().default(null),
  /** The images of a user message (absent from older plugins, whose text says `[image]` instead). */
  images: z.array(MessageImage).max(FieldMax.images).optional(),
});
export type Message = z.infer<typeof Message>;

/**
 * On the `message_start`/`message_end` of a user message that a `prompt` frame delivered: which prompt, and
 * who sent it (`by`, as the frame said). Absent for a message typed in pi's terminal and from older plugins.
 */
export const MessageFrom = z.looseObject({
  promptId: z.string().max(FieldMax.promptId).optional(),
  by: z.string().max(FieldMax.by).optional(),
});
export type MessageFrom = z.infer<typeof MessageFrom>;

export const Usage = z.looseObject({
  inputTokens: z.number().nonnegative().optional(),
  outputTokens: z.number().nonnegative().optional(),
  totalCost: z.number().nonnegative().optional(),
});
export type Usage = z.infer<typeof Usage>;

// ---------------------------------------------------------------------------------------------
// Plugin → daemon (Transport 1)

const envelope = {
  v: z.literal(PROTOCOL_VERSION),
  sessionId: SessionId,
  seq: z.number().int().nonnegative(),
  ts: z.number(),
};
const event = <T extends string, S extends z.ZodRawShape>(type: T, shape: S) =>
  z.looseObject({ ...envelope, type: z.literal(type), ...shape });

export const HelloFrame = event("hello", {
  seq: z.literal(0),
  session: SessionInfo,
  /** The approval ids this pi process still waits for (newer plugins); the session's others are orphans. */
  waiting: z.array(z.string().max(FieldMax.approvalId)).max(FieldMax.waiting).optional(),
});
export const MessageStartEvent = event("message_start", {
  message: z.looseObject({ role: z.string().max(FieldMax.role), id: z.string().max(FieldMax.messageId) }),
  from: MessageFrom.optional(),
});
/** `kind` (added by lvmh-agent; absent means text) tells reasoning deltas from answer text while streaming. */
export const MessageUpdateEvent = event("message_update", {
  delta: z.string(),
  kind: z.enum(["text", "thinking"]).optional(),
});
export const MessageEndEvent = event("message_end", { message: Message, from: MessageFrom.optional() });
export const ToolStartEvent = event("tool_execution_start", {
  toolCallId: z.string(),
  toolName: z.string(),
  args: z.unknown(),
});
export const ToolUpdateEvent = event("tool_execution_update", {
  toolCallId: z.string(),
  toolName: z.string(),
  partial: z.string(),
});
export const ToolEndEvent = event("tool_execution_end", {
  toolCallId: z.string(),
  toolName: z.string(),
  isError: z.boolean(),
  resultPreview: z.string().default(""),
});
export const AgentStartEvent = event("agent_start", {});
export const AgentEndEvent = event("agent_end", { usage: Usage.default({}) });
export const AgentSettledEvent = event("agent_settled", {});
export const SessionInfoEvent = event("session_info", { session: SessionInfo });
export const ByeEvent = event("bye", { reason: z.string().max(FieldMax.byeReason).default("shutdown") });
/** Sent by the plugin after a reconnect when its buffer had to drop events it could not deliver. */
export const BufferOverflowEvent = event("buffer_overflow", {
  dropped: z.number().int().nonnegative(),
  firstDroppedSeq: z.number().int().nonnegative().optional(),
  lastDroppedSeq: z.number().int().nonnegative().optional(),
});

/** The plugin waits for a person before running a tool call in the session's ask set. */
export const ApprovalRequestEvent = event("approval_request", {
  approvalId: z.string().min(1).max(FieldMax.approvalId),
  toolCallId: z.string().max(FieldMax.toolCallId),
  toolName: z.string().max(FieldMax.toolName),
  args: z.unknown(),
});
export const ApprovalDecision = z.enum(["approve", "reject"]);
export type ApprovalDecision = z.infer<typeof ApprovalDecision>;
/** Where the answer the plugin applied came from. */
export const ApprovalSource = z.enum(["web", "terminal", "abort", "timeout"]);
export type ApprovalSource = z.infer<typeof ApprovalSource>;
/** The plugin applied an answer (or gave up waiting): the tool ran or was blocked. */
export const ApprovalResolvedEvent = event("approval_resolved", {
  approvalId: z.string().min(1).max(FieldMax.approvalId),
  decision: ApprovalDecision,
  by: z.string().max(FieldMax.by),
  source: ApprovalSource,
});
/** The plugin's answer to a daemon command that carried a `commandId`. */
export const CommandResultEvent = event("command_result", {
  commandId: z.string().min(1).max(FieldMax.commandId),
  ok: z.boolean(),
  error: z.string().max(FieldMax.commandError).optional(),
});

/** Every event a plugin may send after `hello`. */
export const AgentEvent = z.discriminatedUnion("type", [
  MessageStartEvent,
  MessageUpdateEvent,
  MessageEndEvent,
  ToolStartEvent,
  ToolUpdateEvent,
  ToolEndEvent,
  AgentStartEvent,
  AgentEndEvent,
  AgentSettledEvent,
  SessionInfoEvent,
  ByeEvent,
  BufferOverflowEvent,
  ApprovalRequestEvent,
  ApprovalResolvedEvent,
  CommandResultEvent,
]);
export type AgentEvent = z.infer<typeof AgentEvent>;
export type AgentEventType = AgentEvent["type"];

/** Application heartbeat: the daemon answers `pong` (WebSocket pings are the daemon's own dead-peer check). */
export const PingFrame = event("ping", { seq: z.literal(0) });
/** Optional feature `batch`: many events in one frame, each validated on its own, answered by one ack. */
export const BatchFrame = event("batch", {
  seq: z.literal(0),
  events: z.array(z.unknown()).min(1).max(MAX_BATCH_EVENTS),
});
export type BatchFrame = z.infer<typeof BatchFrame>;

export const PluginFrame = z.discriminatedUnion("type", [
  HelloFrame,
  PingFrame,
  BatchFrame,
  ...AgentEvent.options,
]);
export type PluginFrame = z.infer<typeof PluginFrame>;
export type HelloFrame = z.infer<typeof HelloFrame>;

/** Events that are fanned out live but never persisted. */
export function isEphemeral(type: AgentEventType): boolean {
  return type === "message_update";
}

// ---------------------------------------------------------------------------------------------
// Daemon → plugin

const daemonEnvelope = {
  v: z.literal(PROTOCOL_VERSION),
  sessionId: z.string(),
  seq: z.literal(0),
  ts: z.number(),
};
export const WelcomeFrame = z.object({
  ...daemonEnvelope,
  type: z.literal("welcome"),
  lastSeq: z.number().int().nonnegative(),
  /** The daemon's ask set for this session; absent from older daemons (no asking). */
  policy: z.object({ ask: AskSet }).optional(),
  /** Optional features of version 1 this daemon supports (`batch`). */
  features: z.array(z.string()).optional(),
});
export const AckFrame = z.object({ ...daemonEnvelope, type: z.literal("ack"), lastSeq: z.number().int() });
export const DeliverAs = z.enum(["steer", "followUp"]);
export type DeliverAs = z.infer<typeof DeliverAs>;
/** An image of a prompt, as pi takes it (`{type: "image", data, mimeType}`); checked by `lib/images.ts`. */
export const PromptImage = z.object({
  mimeType: z.string().max(FieldMax.mimeType),
  data: z.string(),
});
export type PromptImage = z.infer<typeof PromptImage>;
export const PromptFrame = z.object({
  ...daemonEnvelope,
  type: z.literal("prompt"),
  promptId: z.string(),
  message: z.string(),
  deliverAs: DeliverAs,
  /** Images sent with the text; such a frame may be as large as `MAX_PROMPT_BODY_BYTES`. */
  images: z.array(PromptImage).optional(),
  /** Answered by a `command_result` event (plugins that predate it never answer). */
  commandId: z.string().optional(),
  /** Who sent it: a token's name, `bootstrap`, or `hook:NAME`; the plugin puts it on the user message. */
  by: z.string().optional(),
});
export const AbortFrame = z.object({
  ...daemonEnvelope,
  type: z.literal("abort"),
  commandId: z.string().optional(),
});
/** Switch the session's model (and thinking level), answered by `command_result`. */
export const SetModelFrame = z.object({
  ...daemonEnvelope,
  type: z.literal("set_model"),
  commandId: z.string(),
  provider: z.string(),
  model: z.string(),
  thinking: ThinkingLevel.optional(),
});
/** Rename the session through pi's session name, answered by `command_result`. */
export const SetNameFrame = z.object({
  ...daemonEnvelope,
  type: z.literal("set_name"),
  commandId: z.string(),
  name: z.string(),
});
/** The session's ask set changed; replaces the one from `welcome`. */
export const PolicyFrame = z.object({ ...daemonEnvelope, type: z.literal("policy"), ask: AskSet });
/** A person answered an `approval_request`; sent again whenever the plugin re-sends the request. */
export const ApprovalDecisionFrame = z.object({
  ...daemonEnvelope,
  type: z.literal("approval_decision"),
  approvalId: z.string(),
  decision: ApprovalDecision,
  reason: z.string().optional(),
  by: z.string(),
});
export const PongFrame = z.object({ ...daemonEnvelope, type: z.literal("pong") });
export const ErrorCode = z.enum(["bad_json", "bad_version", "bad_frame", "hello_required", "wrong_session"]);
export type ErrorCode = z.infer<typeof ErrorCode>;
export const ErrorFrame = z.object({
  v: z.literal(PROTOCOL_VERSION),
  type: z.literal("error"),
  code: ErrorCode,
  message: z.string(),
  seq: z.number().optional(),
});
export const DaemonFrame = z.discriminatedUnion("type", [
  WelcomeFrame,
  AckFrame,
  PromptFrame,
  AbortFrame,
  SetModelFrame,
  SetNameFrame,
  PolicyFrame,
  ApprovalDecisionFrame,
  PongFrame,
  ErrorFrame,
]);
export type DaemonFrame = z.infer<typeof DaemonFrame>;

// ---------------------------------------------------------------------------------------------
// REST (Transport 2)

export const PromptBody = z.object({
  message: z.string().trim().min(1, "message must not be empty").max(MAX_PROMPT_CHARS),
  deliverAs: DeliverAs.default("steer"),
  /** Checked further (count, type, base64, magic bytes, sizes) by `checkImages` in `lib/images.ts`. */
  images: z.array(PromptImage).max(FieldMax.images).optional(),
});
export type PromptBody = z.infer<typeof PromptBody>;
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

const seqParam = z.coerce.number().int().nonnegative();
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
export const SpawnBody = z.object({ repo: RepoPath, branch: BranchName.optional(), ask: AskSet.optional() });
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

// ---------------------------------------------------------------------------------------------
// Browser socket (Transport 3)

export const SubscribeFrame = z.object({
  type: z.literal("subscribe"),
  sessionId: SessionId,
  /** Optional catch-up: persisted events with seq > after are sent before live ones. */
  after: seqParam.optional(),
});
export const UnsubscribeFrame = z.object({ type: z.literal("unsubscribe"), sessionId: SessionId });
/** Ask for the whole session list again (answered by `session_list`). */
export const ListFrame = z.object({ type: z.literal("list") });
/** Application heartbeat, answered by `pong`. */
export const BrowserPingFrame = z.object({ type: z.literal("ping") });
export const BrowserFrame = z.discriminatedUnion("type", [
  SubscribeFrame,
  UnsubscribeFrame,
  ListFrame,
  BrowserPingFrame,
]);
export type BrowserFrame = z.infer<typeof BrowserFrame>;

/** Frames the daemon sends to browsers; plain types, since the daemon only writes them. */
export type ServerFrame =
  | { type: "session_list"; sessions: SessionSummary[] }
  /** Rows that changed since the last list or update (coalesced per tick), and ids that were deleted. */
  | { type: "session_update"; sessions: SessionSummary[]; removed: string[] }
  | { type: "approvals"; pending: Approval[] }
  | { type: "pong" }
  | { type: "events"; sessionId: string; after: number; events: StoredEvent[] }
  | { type: "spawn_status"; jobs: SpawnJob[] }
  | { type: "error"; message: string };
export type ServerFrameType = ServerFrame["type"];

// ---------------------------------------------------------------------------------------------
// Parsing

/** Result of parsing one boundary input: the value, or a short message saying what was wrong. */
export type Parsed<T> = { ok: true; value: T } | { ok: false; code: ErrorCode; message: string };

function describe(error: z.ZodError): string {
  const issue = error.issues[0];
  const path = issue.path.length ? issue.path.join(".") + ": " : "";
  return `${path}${issue.message}`;
}

/** Parse one text frame from a plugin: JSON, an object, version 1, then the schema. Never throws. */
export function parsePluginFrame(text: string): Parsed<PluginFrame> {
  return parseFrame(text, PluginFrame, (raw) => {
    if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
      return { ok: false, code: "bad_frame", message: "frame must be a JSON object" };
    }
    const v = (raw as { v?: unknown }).v;
    if (v !== PROTOCOL_VERSION) {
      return { ok: false, code: "bad_version", message: `unsupported protocol version ${JSON.stringify(v)}` };
    }
    // The hot shapes are used as parsed (lib/frame_precheck.ts); the rest goes through the schema.
    return hotShape(raw as Record<string, unknown>) ? { ok: true, value: raw as PluginFrame } : null;
  });
}

/** Validate one event of a `batch` (or alone) as `AgentEvent`; the hot shapes take the fast path. */
export function parseAgentEvent(
  raw: unknown,
): { ok: true; value: AgentEvent } | { ok: false; message: string } {
  const hot = typeof raw === "object" && raw !== null ? hotShape(raw as Record<string, unknown>) : null;
  return hot === "event" ? { ok: true, value: raw as AgentEvent } : parseWith(AgentEvent, raw);
}

/** Parse one text frame from a browser. Never throws. */
export function parseBrowserFrame(text: string): Parsed<BrowserFrame> {
  return parseFrame(text, BrowserFrame);
}

function parseFrame<T>(
  text: string,
  schema: z.ZodType<T>,
  precheck: (raw: unknown) => Parsed<T> | null = () => null,
): Parsed<T> {
  if (nestsDeeper(text)) {
    return { ok: false, code: "bad_frame", message: `frame nests deeper than ${MAX_JSON_DEPTH} levels` };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { ok: false, code: "bad_json", message: "frame is not valid JSON" };
  }
  const early = precheck(raw);
  if (early) return early;
  const result = schema.safeParse(raw);
  return result.success
    ? { ok: true, value: result.data }
    : { ok: false, code: "bad_frame", message: describe(result.error) };
}

/** Parse any REST input against a schema, describing the first problem. Never throws. */
export function parseWith<T>(schema: z.ZodType<T>, input: unknown): { ok: true; value: T } | {
  ok: false;
  message: string;
} {
  const result = schema.safeParse(input);
  return result.success ? { ok: true, value: result.data } : { ok: false, message: describe(result.error) };
}

/** Every message type in the protocol, by direction; PROTOCOL.md must name exactly these. */
export const MESSAGE_TYPES = {
  pluginToDaemon: PluginFrame.options.map((o) => o.shape.type.value),
  daemonToPlugin: DaemonFrame.options.map((o) => o.shape.type.value),
  browserToDaemon: BrowserFrame.options.map((o) => o.shape.type.value),
  daemonToBrowser: [
    "session_list",
    "session_update",
    "events",
    "spawn_status",
    "approvals",
    "pong",
    "error",
  ] satisfies ServerFrameType[],
};
