/**
 * The conversation of one session, rebuilt from its events: a pure reducer shared by the server render and the
 * session island. Persisted events are applied once each (by seq); live `message_update` deltas only feed the
 * message being streamed, since the persisted `message_end` that follows carries the whole text.
 */
import type { Message, Usage } from "../lib/protocol.ts";
import type { UiEvent } from "./types.ts";
import { imageUrl } from "./rest.ts";
import { type Conversation, emptyConversation, type ToolCall } from "./conversation_state.ts";
import { keepUnchanged } from "./conversation_keep.ts";

export * from "./conversation_state.ts";

/** One event type of the union, narrowed. */
type Ev<T extends UiEvent["type"]> = Extract<UiEvent, { type: T }>;

/**
 * Rebuild a conversation from persisted events in any order (duplicates are dropped).
 * @param events persisted events of one session
 */
export function buildConversation(events: readonly UiEvent[]): Conversation {
  return applyEvents(emptyConversation(), events);
}

/**
 * Apply a batch of events (persisted or live) newer than what the conversation holds; returns a new object.
 * Persisted events with seq ≤ `lastSeq` are ignored, so replays after a reconnect are harmless.
 * @param conv current state (not mutated)
 * @param batch events in seq order as the daemon sends them
 */
export function applyEvents(conv: Conversation, batch: readonly UiEvent[]): Conversation {
  const next: Conversation = {
    ...conv,
    events: conv.events.slice(),
    items: conv.items.slice(),
    tools: { ...conv.tools },
    toolOrder: conv.toolOrder.slice(),
    approvals: { ...conv.approvals },
    approvalOrder: conv.approvalOrder.slice(),
    totals: { ...conv.totals },
    commands: { ...conv.commands },
  };
  const sorted = [...batch].sort((a, b) => a.seq - b.seq);
  for (const ev of sorted) {
    if (ev.type === "message_update") {
      applyDelta(next, ev);
      continue;
    }
    if (ev.seq <= next.lastSeq) continue;
    next.events.push(ev);
    next.lastSeq = ev.seq;
    if (next.firstSeq === 0) next.firstSeq = ev.seq;
    applyPersisted(next, ev);
  }
  return next;
}

/**
 * Add an older page of persisted events (seq below `firstSeq`) and rebuild; live streaming state is kept, and
 * so are the items and tool calls the page does not change (the same objects: see conversation_keep.ts).
 * @param conv current state (not mutated)
 * @param older events from `GET …/events?before=firstSeq`
 */
export function prependEvents(conv: Conversation, older: readonly UiEvent[]): Conversation {
  const first = conv.firstSeq || Infinity;
  const fresh = older.filter((e) => e.seq < first && e.type !== "message_update");
  if (fresh.length === 0) return conv;
  const rebuilt = buildConversation([...fresh, ...conv.events]);
  return keepUnchanged(conv, { ...rebuilt, streaming: conv.streaming });
}

/**
 * Merge persisted events that may fall anywhere (e.g. a gap refetched after newer events arrived): appends
 * when all are newer, otherwise rebuilds from the union (unchanged items and calls kept). Events already held are
 * ignored.
 * @param conv current state (not mutated)
 * @param events persisted events of this session, any order
 */
export function mergeEvents(conv: Conversation, events: readonly UiEvent[]): Conversation {
  const held = new Set(conv.events.map((e) => e.seq));
  const fresh = events.filter((e) => e.type !== "message_update" && !held.has(e.seq));
  if (fresh.length === 0) return conv;
  if (fresh.every((e) => e.seq > conv.lastSeq)) return applyEvents(conv, fresh);
  const rebuilt = buildConversation([...conv.events, ...fresh]);
  return keepUnchanged(conv, { ...rebuilt, streaming: conv.streaming });
}

function applyDelta(conv: Conversation, ev: Ev<"message_update">): void {
  const delta = ev.delta;
  // A delta older than a persisted event we hold belongs to a message already complete.
  if (ev.seq <= conv.lastSeq) return;
  const s = conv.streaming ?? { messageId: null, parts: [] };
  if (s.parts.some((p) => p.seq === ev.seq)) return;
  const parts = [...s.parts, { seq: ev.seq, delta, thinking: ev.kind === "thinking" }].sort((a, b) =>
    a.seq - b.seq
  );
  conv.streaming = { ...s, parts };
}

function str(v: unknown): string {
  return typeof v === "string" ? v : "";
}

function tool(conv: Conversation, id: string, name: string, seq: number): ToolCall {
  let t = conv.tools[id];
  if (!t) {
    t = {
      id,
      name,
      argsJson: "",
      status: "pending",
      partial: "",
      resultPreview: "",
      resultText: null,
      details: undefined,
      approvalId: null,
      seq,
      inMessage: false,
    };
    conv.toolOrder.push(id);
  } else {
    t = { ...t };
  }
  if (!t.name && name) t.name = name;
  conv.tools[id] = t;
  return t;
}

function applyPersisted(conv: Conversation, ev: Exclude<UiEvent, Ev<"message_update">>): void {
  const key = `e${ev.seq}`;
  switch (ev.type) {
    case "message_start": {
      if (ev.message.role !== "assistant") return;
      // Deltas can overtake their own message_start (they skip the store): keep those newer than it.
      const parts = (conv.streaming?.parts ?? []).filter((p) => p.seq > ev.seq);
      conv.streaming = { messageId: ev.message.id, parts };
      return;
    }
    case "message_end":
      return applyMessage(conv, ev, key);
    case "tool_execution_start": {
      const t = tool(conv, ev.toolCallId, ev.toolName, ev.seq);
      // A call still waiting for its approval has not started for the person watching.
      if (t.status !== "awaiting") t.status = "running";
      if (!t.argsJson && ev.args !== undefined) t.argsJson = JSON.stringify(ev.args);
      return;
    }
    case "tool_execution_update": {
      const t = tool(conv, ev.toolCallId, ev.toolName, ev.seq);
      t.partial = ev.partial;
      if (t.status === "pending") t.status = "running";
      return;
    }
    case "tool_execution_end": {
      const t = tool(conv, ev.toolCallId, ev.toolName, ev.seq);
      if (t.status !== "rejected") t.status = ev.isError ? "error" : "done";
      t.resultPreview = ev.resultPreview;
      if (ev.details !== undefined) t.details = ev.details;
      return;
    }
    case "approval_request": {
      const t = tool(conv, ev.toolCallId, ev.toolName, ev.seq);
      if (t.status === "pending" || t.status === "running") t.status = "awaiting";
      if (!t.argsJson && ev.args !== undefined) t.argsJson = JSON.stringify(ev.args);
      t.approvalId = ev.approvalId;
      if (!conv.approvals[ev.approvalId]) conv.approvalOrder.push(ev.approvalId);
      conv.approvals[ev.approvalId] = {
        id: ev.approvalId,
        toolCallId: ev.toolCallId,
        toolName: ev.toolName,
        args: ev.args,
        seq: ev.seq,
        resolved: conv.approvals[ev.approvalId]?.resolved ?? null,
      };
      return;
    }
    case "approval_resolved": {
      const a = conv.approvals[ev.approvalId];
      if (!a) return;
      conv.approvals[ev.approvalId] = {
        ...a,
        resolved: { decision: ev.decision, by: ev.by, source: ev.source, seq: ev.seq },
      };
      const t = conv.tools[a.toolCallId];
      if (t?.status === "awaiting") {
        conv.tools[a.toolCallId] = { ...t, status: ev.decision === "approve" ? "running" : "rejected" };
      }
      return;
    }
    case "agent_start":
      conv.running = true;
      return;
    case "agent_end": {
      conv.running = false;
      endStream(conv, ev.seq);
      stopOpenTools(conv);
      const usage: Usage = ev.usage;
      conv.totals.inputTokens += num(usage.inputTokens);
      conv.totals.outputTokens += num(usage.outputTokens);
      conv.totals.totalCost += num(usage.totalCost);
      conv.items.push({ kind: "run", key, seq: ev.seq, usage });
      return;
    }
    case "agent_settled":
      conv.running = false;
      endStream(conv, ev.seq);
      stopOpenTools(conv);
      return;
    case "bye":
      endStream(conv, ev.seq);
      stopOpenTools(conv);
      conv.items.push({
        kind: "notice",
        key,
        seq: ev.seq,
        text: `Session disconnected (${ev.reason || "bye"})`,
      });
      return;
    case "buffer_overflow":
      conv.items.push({
        kind: "notice",
        key,
        seq: ev.seq,
        text: `The plugin dropped ${num(ev.dropped)} events while the daemon was unreachable`,
      });
      return;
    case "session_notice":
      conv.items.push({ kind: "notice", key, seq: ev.seq, text: ev.text });
      return;
    case "command_result":
      conv.commands[ev.commandId] = { ok: ev.ok, error: ev.ok ? null : ev.error ?? "refused" };
      return;
    case "session_info":
      // The rest of the snapshot reaches the page through the session list, which leaves out the models.
      if (ev.session.models) conv.models = ev.session.models;
      return;
    default: {
      // Exhaustive: a new event type in lib/protocol.ts fails the type check here until it is handled.
      const never: never = ev;
      return never;
    }
  }
}

/** A run that ended (or was aborted) without a message_end: drop the deltas it streamed before `seq`. */
function endStream(conv: Conversation, seq: number): void {
  if (!conv.streaming) return;
  const rest = conv.streaming.parts.filter((p) => p.seq > seq);
  conv.streaming = rest.length ? { messageId: null, parts: rest } : null;
}

/** Calls still queued or running when their run is over will never report: mark them stopped. */
function stopOpenTools(conv: Conversation): void {
  for (const id of conv.toolOrder.slice(conv.toolsOpenFrom)) {
    const t = conv.tools[id];
    if (t.status === "pending" || t.status === "running" || t.status === "awaiting") {
      conv.tools[id] = { ...t, status: "stopped" };
    }
  }
  conv.toolsOpenFrom = conv.toolOrder.length;
}

function num(v: unknown): number {
  return typeof v === "number" && Number.isFinite(v) ? v : 0;
}

function applyMessage(conv: Conversation, ev: Ev<"message_end">, key: string): void {
  // Unknown fields of the message are kept by the schema (a plugin may forward `details`, `isError`).
  const m: Message & { toolName?: unknown; details?: unknown; isError?: unknown } = ev.message;
  const text = m.text;
  if (m.role === "assistant") {
    if (conv.streaming) {
      // Deltas newer than this message_end already belong to the next message.
      const rest = conv.streaming.parts.filter((p) => p.seq > ev.seq);
      conv.streaming = rest.length ? { messageId: null, parts: rest } : null;
    }
    const ids: string[] = [];
    for (const c of m.toolCalls) {
      const t = tool(conv, c.id, c.name, ev.seq);
      t.argsJson = c.argsJson || t.argsJson;
      t.inMessage = true;
      ids.push(t.id);
    }
    const thinking = m.thinking ? m.thinking : null;
    conv.items.push({ kind: "assistant", key, seq: ev.seq, text, thinking, toolCalls: ids });
  } else if (m.role === "toolResult") {
    const callId = m.toolCallId;
    const known = callId !== null && conv.tools[callId]?.inMessage === true;
    if (callId !== null) {
      const t = tool(conv, callId, str(m.toolName), ev.seq);
      t.resultText = text;
      if (m.details !== undefined) t.details = m.details;
      // A rejected call's result says why; its card keeps saying "rejected".
      if (t.status !== "rejected" && m.isError === true) t.status = "error";
      else if (t.status === "pending" || t.status === "running" || t.status === "awaiting") t.status = "done";
    }
    // A result whose call we hold is shown inside that call's card; others stand alone.
    if (!known) conv.items.push({ kind: "toolResult", key, seq: ev.seq, toolCallId: callId, text });
  } else if (m.role === "user") {
    const web = ev.from ? { by: typeof ev.from.by === "string" && ev.from.by ? ev.from.by : null } : null;
    const images = (m.images ?? []).map((i) => ({
      sha256: i.sha256,
      mimeType: i.mimeType,
      bytes: i.bytes,
      src: i.source === "web" ? imageUrl(ev.sessionId, i.sha256) : null,
    }));
    conv.items.push({ kind: "user", key, seq: ev.seq, text, web, images });
  } else {
    conv.items.push({ kind: "system", key, seq: ev.seq, text });
  }
}

/** Persisted events a session page renders first, and fetches per page when scrolling back (one number). */
export const HISTORY_PAGE = 300;
