/** Transport 1 of the protocol: what a plugin sends on `/agent/ws`, and what the daemon sends back. */
import { z } from "zod";
import { FieldMax, MAX_BATCH_EVENTS, PROTOCOL_VERSION } from "../wire.ts";
import { CHANGE_SCOPES, type Changes, type ChangeScope, MAX_AUTHOR, MAX_TITLE } from "../changes/types.ts";
import {
  AskSet,
  Message,
  MessageFrom,
  PluginBudget,
  PromptSource,
  SessionId,
  SessionInfo,
  ThinkingLevel,
  Usage,
} from "./shapes.ts";

// ---------------------------------------------------------------------------------------------
// Plugin → daemon (Transport 1)

const envelope = {
  v: z.literal(PROTOCOL_VERSION),
  sessionId: SessionId,
  seq: z.number().int().nonnegative(),
  ts: z.number(),
};
// The cast only states what the spread does (a field of `shape` replaces the envelope's, as `seq` does in
// `hello`): TypeScript types a spread of a generic as an intersection, whose input type for hello's `seq`
// was `undefined`, so a plugin could not type the 0 it writes.
const event = <T extends string, S extends z.ZodRawShape>(type: T, shape: S) =>
  z.looseObject(
    { ...envelope, type: z.literal(type), ...shape } as
      & Omit<typeof envelope, keyof S>
      & { type: z.ZodLiteral<T> }
      & S,
  );

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

/**
 * Something the person should know about this run of the session, shown in its timeline. `not_saved`: a
 * resumed worker found no pi session file (pi 0.73.1 writes nothing before the first answer), so pi starts
 * without the conversation's earlier context.
 */
export const SessionNoticeEvent = event("session_notice", {
  kind: z.enum(["not_saved"]),
  text: z.string().max(FieldMax.noticeText),
});

/** The plugin waits for a person before running a tool call in the session's ask set. */
export const ApprovalRequestEvent = event("approval_request", {
  approvalId: z.string().min(1).max(FieldMax.approvalId),
  toolCallId: z.string().max(FieldMax.toolCallId),
  toolName: z.string().max(FieldMax.toolName),
  args: z.unknown(),
  /** `budget`: not a tool call but the session's budget, reached (newer plugins); absent means a tool call. */
  kind: z.enum(["tool", "budget"]).optional(),
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
/** One file of a `changes` answer (lib/changes/types.ts `ChangedFile`, checked both ways below). */
export const ChangedFileShape = z.object({
  // Paths and branch names are git's: unbounded but for the frame's own size, as is the whole answer.
  path: z.string(),
  oldPath: z.string().optional(),
  status: z.enum(["added", "modified", "deleted", "renamed"]),
  binary: z.boolean(),
  additions: z.number().int().nonnegative(),
  deletions: z.number().int().nonnegative(),
  diff: z.string().optional(),
  truncated: z.boolean().optional(),
  collapsed: z.boolean().optional(),
});
/** What changed in pi's cwd: the answer of `GET /api/sessions/:id/changes` (lib/changes/types.ts `Changes`). */
export const ChangesShape = z.object({
  scope: z.enum(CHANGE_SCOPES as [ChangeScope, ...ChangeScope[]]),
  base: z.object({ branch: z.string(), sha: z.string().max(64) }).nullable(),
  head: z.string().max(64).nullable(),
  branch: z.string().nullable(),
  stats: z.object({
    files: z.number().int().nonnegative(),
    additions: z.number().int().nonnegative(),
    deletions: z.number().int().nonnegative(),
  }),
  files: z.array(ChangedFileShape),
  commits: z.array(z.object({
    sha: z.string().max(64),
    title: z.string().max(MAX_TITLE),
    author: z.string().max(MAX_AUTHOR),
    at: z.number(),
  })),
  truncated: z.boolean().optional(),
});
// The schema and lib/changes's types (which the plugin builds its answer with) describe one shape.
const _changesSame: [z.infer<typeof ChangesShape>, Changes] = [
  {} as Changes,
  {} as z.infer<typeof ChangesShape>,
];

/** The plugin's answer to a daemon command that carried a `commandId`. */
export const CommandResultEvent = event("command_result", {
  commandId: z.string().min(1).max(FieldMax.commandId),
  ok: z.boolean(),
  error: z.string().max(FieldMax.commandError).optional(),
  /** The answer to a `changes` command (newer plugins). */
  changes: ChangesShape.optional(),
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
  SessionNoticeEvent,
]);
export type AgentEvent = z.infer<typeof AgentEvent>;
export type AgentEventType = AgentEvent["type"];
/** An event as a plugin writes it: the schema's input, before the daemon's parse applies the defaults. */
export type AgentEventInput = z.input<typeof AgentEvent>;

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
/** A `hello` as a plugin writes it (the schema's input). */
export type HelloFrameInput = z.input<typeof HelloFrame>;
/** A `ping` as a plugin writes it. */
export type PingFrameInput = z.input<typeof PingFrame>;

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
  /** The session's budget, which the plugin enforces; null or absent: none. */
  budget: PluginBudget.nullable().optional(),
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
  /** Where it was typed: `cli` for lvmh's CLI, else `web` (the page or the REST API); onto the message too. */
  source: PromptSource.optional(),
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
/**
 * What changed in the terminal session's git repository (`GET /api/sessions/:id/changes`): answered by a
 * `command_result` carrying `changes`; with `path`, its `files` hold only that file, with its whole diff.
 */
export const ChangesFrame = z.object({
  ...daemonEnvelope,
  type: z.literal("changes"),
  commandId: z.string(),
  scope: z.enum(CHANGE_SCOPES as [ChangeScope, ...ChangeScope[]]),
  path: z.string().optional(),
});
/** The session's ask set changed; replaces the one from `welcome`. */
export const PolicyFrame = z.object({
  ...daemonEnvelope,
  type: z.literal("policy"),
  ask: AskSet,
  /** The session's budget now (null: none); absent from older daemons, which keep the plugin's as it is. */
  budget: PluginBudget.nullable().optional(),
});
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
  ChangesFrame,
  PolicyFrame,
  ApprovalDecisionFrame,
  PongFrame,
  ErrorFrame,
]);
export type DaemonFrame = z.infer<typeof DaemonFrame>;
