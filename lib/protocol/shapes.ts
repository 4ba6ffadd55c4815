/** The shapes every transport of the protocol shares: ids, the session snapshot, messages, usage, ask sets. */
import { z } from "zod";
import { FieldMax, SESSION_ID_RE } from "../wire.ts";

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
  /** What an assistant message cost (newer plugins): budgets and usage are counted from these. */
  usage: z.lazy(() => Usage).optional(),
});
export type Message = z.infer<typeof Message>;

/**
 * On the `message_start`/`message_end` of a user message that a `prompt` frame delivered: which prompt, and
 * who sent it (`by`, as the frame said). Absent for a message typed in pi's terminal and from older plugins.
 */
/** Where a prompt the daemon delivered was typed (a hook's is told by its `by`, `hook:NAME`). */
export const PromptSource = z.enum(["web", "cli"]);
export type PromptSource = z.infer<typeof PromptSource>;

export const MessageFrom = z.looseObject({
  promptId: z.string().max(FieldMax.promptId).optional(),
  by: z.string().max(FieldMax.by).optional(),
  source: PromptSource.optional(),
});
export type MessageFrom = z.infer<typeof MessageFrom>;

export const Usage = z.looseObject({
  inputTokens: z.number().nonnegative().optional(),
  outputTokens: z.number().nonnegative().optional(),
  totalCost: z.number().nonnegative().optional(),
});
export type Usage = z.infer<typeof Usage>;

/** What a session's budget reacts with when reached: wait for a person, or stop the run. */
export const BudgetOnReach = z.enum(["ask", "stop"]);
export type BudgetOnReach = z.infer<typeof BudgetOnReach>;
/** What a session has spent: dollars, and input+output tokens. */
export const Spent = z.object({ cost: z.number().nonnegative(), tokens: z.number().nonnegative() });
export type Spent = z.infer<typeof Spent>;
/**
 * A session's budget as the plugin enforces it (`welcome.budget`, `policy.budget`): the limits in force
 * (raised by each approved budget card), the size one approval adds (`step`), what the daemon counted from
 * the log, and `stopped` when the daemon stops every run (the daily cap).
 */
export const PluginBudget = z.object({
  maxCost: z.number().positive().optional(),
  maxTokens: z.number().positive().optional(),
  onReach: BudgetOnReach,
  step: z.object({ maxCost: z.number().positive().optional(), maxTokens: z.number().positive().optional() }),
  spent: Spent,
  stopped: z.string().max(200).optional(),
  /**
   * What is left of the daily cap when this was sent: the plugin stops by itself once its own spending since
   * then uses it up, without waiting for the daemon to count it (other sessions' spending the daemon sees).
   */
  dailyLeft: z.object({ cost: z.number().optional(), tokens: z.number().optional() }).optional(),
});
export type PluginBudget = z.infer<typeof PluginBudget>;

/** A merge request's state on GitLab. */
export type MergeRequestState = "opened" | "merged" | "closed";
/**
 * What the session list shows of a session's merge request (`!12 · pipeline failed`): its iid, its state and
 * its latest pipeline's status (GitLab's word: `running`, `success`, `failed`, …; null before any pipeline).
 */
export interface SessionMergeRequest {
  iid: number;
  state: MergeRequestState;
  pipeline: string | null;
}
