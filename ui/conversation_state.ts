/**
 * What a session's conversation holds (messages, tool calls, approvals asked, the stream, totals), as the
 * reducer in `ui/conversation.ts` builds it from events and the session page renders it.
 */
import type { ModelEntry, Usage } from "../lib/protocol.ts";
import type { UiEvent } from "./types.ts";

/** What the conversation knows of an approval from the events it holds (the daemon's record adds who and when). */
export interface ApprovalEvent {
  id: string;
  toolCallId: string;
  toolName: string;
  args: unknown;
  seq: number;
  /** From `approval_resolved`: the answer the plugin applied; null while it waits. */
  resolved: { decision: "approve" | "reject"; by: string; source: string; seq: number } | null;
}

/** One tool call as a card shows it: arguments, progress and outcome. */
export interface ToolCall {
  id: string;
  name: string;
  /** Arguments as the model wrote them (JSON text), or serialised from `tool_execution_start`. */
  argsJson: string;
  /**
   * `awaiting`: waits for a person's approval; `rejected`: a person (or a timeout, or an abort) refused it;
   * `stopped`: the run ended (abort, crash, shutdown) before the call reported an outcome.
   */
  status: "pending" | "awaiting" | "running" | "done" | "error" | "rejected" | "stopped";
  /** The id of the latest approval asked for this call, if any. */
  approvalId: string | null;
  partial: string;
  resultPreview: string;
  /** Text of the matching `toolResult` message, when it arrived. */
  resultText: string | null;
  /** `details` of the result when the plugin forwarded it (unknown fields of the message are kept). */
  details: unknown;
  seq: number;
  /** True when an assistant message we hold lists this call (its card shows there). */
  inMessage: boolean;
}

/** An image of a user message, as the conversation shows it. */
export interface UserImage {
  sha256: string;
  mimeType: string;
  bytes: number;
  /** Where the daemon serves it (a web prompt's); null when only pi has it (pasted in the terminal). */
  src: string | null;
}

export type Item =
  | {
    kind: "user";
    key: string;
    seq: number;
    text: string;
    /** Set when the message is a prompt the daemon delivered: who sent it (null when the plugin did not say). */
    web: { by: string | null } | null;
    images: UserImage[];
  }
  | {
    kind: "assistant";
    key: string;
    seq: number;
    text: string;
    thinking: string | null;
    toolCalls: string[];
  }
  | { kind: "toolResult"; key: string; seq: number; toolCallId: string | null; text: string }
  | { kind: "system"; key: string; seq: number; text: string }
  | { kind: "run"; key: string; seq: number; usage: Usage }
  | { kind: "notice"; key: string; seq: number; text: string };

/** The assistant message being streamed: deltas by seq, so a late `message_end` can tell its own from newer ones. */
export interface Streaming {
  messageId: string | null;
  parts: { seq: number; delta: string; thinking: boolean }[];
}

/** The answer text streamed so far (reasoning deltas left out). */
export function streamingText(s: Streaming | null): string {
  return s ? s.parts.filter((p) => !p.thinking).map((p) => p.delta).join("") : "";
}

/** The reasoning streamed so far: deltas the plugin marked `kind: "thinking"`. */
export function streamingThinking(s: Streaming | null): string {
  return s ? s.parts.filter((p) => p.thinking).map((p) => p.delta).join("") : "";
}

export interface Conversation {
  /** Persisted events held, ascending by seq, no duplicates. */
  events: UiEvent[];
  /** Lowest and highest persisted seq held (0 when none). */
  firstSeq: number;
  lastSeq: number;
  items: Item[];
  tools: Record<string, ToolCall>;
  /** Tool call ids in call order. */
  toolOrder: string[];
  /** Index in `toolOrder` of the first call made since the last run ended (earlier ones are all closed). */
  toolsOpenFrom: number;
  /** Approvals asked in the events held, by approval id, and their ids in request order. */
  approvals: Record<string, ApprovalEvent>;
  approvalOrder: string[];
  streaming: Streaming | null;
  /** Set by agent_start / agent_end in the events held; null when they say nothing. */
  running: boolean | null;
  totals: Required<Usage>;
  /** The plugin's answers to commands sent from a page (`command_result`), by commandId. */
  commands: Record<string, CommandOutcome>;
  /** The models of the latest `session_info` held (the session list leaves them out); null before one. */
  models: ModelEntry[] | null;
}

/** How the plugin answered one command: done, or refused with pi's reason. */
export interface CommandOutcome {
  ok: boolean;
  error: string | null;
}

/** An empty conversation. */
export function emptyConversation(): Conversation {
  return {
    events: [],
    firstSeq: 0,
    lastSeq: 0,
    items: [],
    tools: {},
    toolOrder: [],
    toolsOpenFrom: 0,
    approvals: {},
    approvalOrder: [],
    streaming: null,
    running: null,
    totals: { inputTokens: 0, outputTokens: 0, totalCost: 0 },
    commands: {},
    models: null,
  };
}
