/**
 * pi's events as the protocol's events on the session's link: messages (a user message with the web prompt it
 * shows, when it is one), tool runs (their output cut to a tail, at most once per TOOL_UPDATE_MS), a run's
 * usage and the session's name, model and thinking level. The stateful half of `mapping.ts`: it pairs each
 * message's start with its end and a tool's updates with its end, within one factory run. Apart from the
 * binding, which wires pi's hooks and takes the daemon's commands; every method returns at once.
 */
import { FieldMax } from "../../lib/wire.ts";
import { messageUsage } from "./budget.ts";
import { PREVIEW_CHARS, TOOL_UPDATE_MS } from "./constants.ts";
import type { Link } from "./link.ts";
import { mapRole, messageId, resultText, safeArgs, toMessage } from "./mapping.ts";
import { fromOf, type Origins, type WebPrompt } from "./origins.ts";
import type { PiApi, PiContext, PiEvent } from "./pi_types.ts";
import { field, modelList, thinkingLevel } from "./snapshot.ts";
import { unref } from "./timers.ts";

interface ToolUpdate {
  last: number;
  pending: PiEvent | null;
  timer: ReturnType<typeof setTimeout> | null;
}

/** The protocol events of one factory run's pi events. */
export class EventMapper {
  #pi: PiApi;
  #link: () => Link | null;
  #origins: Origins;
  #overBudget: () => void;
  #ids = new Map<string, string>();
  // Delivered prompts waiting for their user message, and the ones matched at message_start (by message key).
  #matched = new Map<string, WebPrompt | null>();
  #toolUpdates = new Map<string, ToolUpdate>();

  /**
   * @param options.link the session's link now (null before session_start and after shutdown)
   * @param options.origins the prompts delivered to pi, which user messages are matched against
   * @param options.overBudget an assistant message's usage reached the budget's stop: abort the run
   */
  constructor(pi: PiApi, options: { link: () => Link | null; origins: Origins; overBudget: () => void }) {
    this.#pi = pi;
    this.#link = options.link;
    this.#origins = options.origins;
    this.#overBudget = options.overBudget;
  }

  /** `agent_end`, with the tokens and cost of the run's assistant messages. */
  agentEnd(e: PiEvent): void {
    const usage = { inputTokens: 0, outputTokens: 0, totalCost: 0 };
    for (const m of Array.isArray(e.messages) ? e.messages : []) {
      if (m?.role !== "assistant" || !m.usage) continue;
      usage.inputTokens += Number(m.usage.input) || 0;
      usage.outputTokens += Number(m.usage.output) || 0;
      usage.totalCost += Number(m.usage.cost?.total) || 0;
    }
    this.#link()?.emit("agent_end", { usage });
  }

  messageStart(e: PiEvent): void {
    const link = this.#link();
    if (!link) return;
    const m = e.message ?? {};
    const id = messageId(m, link.nextSeq);
    const key = `${m.role}:${m.timestamp}`;
    this.#ids.set(key, id);
    // A user message pi emits for a delivered prompt says so, and who sent it.
    const web = m.role === "user" && this.#origins.size ? this.#origins.take(m.content) : null;
    if (m.role === "user") this.#matched.set(key, web);
    const message = { role: mapRole(m.role), id };
    link.emit("message_start", web ? { message, from: fromOf(web) } : { message });
  }

  messageUpdate(e: PiEvent): void {
    const link = this.#link();
    const a = e.assistantMessageEvent;
    if (!link || !a) return;
    if (a.type === "text_delta") link.emit("message_update", { delta: a.delta ?? "", kind: "text" });
    else if (a.type === "thinking_delta") {
      link.emit("message_update", { delta: a.delta ?? "", kind: "thinking" });
    }
  }

  messageEnd(e: PiEvent): void {
    const link = this.#link();
    if (!link) return;
    const m = e.message ?? {};
    const key = `${m.role}:${m.timestamp}`;
    const id = this.#ids.get(key) ?? messageId(m, link.nextSeq);
    this.#ids.delete(key);
    // Matched at message_start, or now when its start was not seen (a link opened in between).
    let web: WebPrompt | null = null;
    if (m.role === "user") {
      if (this.#matched.has(key)) web = this.#matched.get(key)!;
      else if (this.#origins.size) web = this.#origins.take(m.content);
      this.#matched.delete(key);
    }
    const message = toMessage(m, id, web);
    const usage = m.role === "assistant" ? messageUsage(m.usage) : null;
    if (usage) {
      // Budgets and the usage page count these; the plugin's own count stops a run without the daemon.
      message.usage = usage;
      // Which model answered: usage reports group by it (the session's model may have changed since).
      if (typeof m.model === "string" && m.model) message.model = m.model.slice(0, FieldMax.model);
      link.budget.add(usage);
      if (link.budget.stopReason) this.#overBudget();
    }
    let size = 300 + message.text.length + (message.thinking?.length ?? 0) +
      (message.images?.length ?? 0) * 200;
    for (const c of message.toolCalls) size += c.argsJson.length;
    link.emit("message_end", web ? { message, from: fromOf(web) } : { message }, size);
  }

  toolExecutionStart(e: PiEvent): void {
    const { args, size } = safeArgs(e.args);
    this.#link()?.emit("tool_execution_start", {
      toolCallId: String(e.toolCallId ?? ""),
      toolName: String(e.toolName ?? ""),
      args,
    }, 300 + size);
  }

  toolExecutionUpdate(e: PiEvent): void {
    if (!this.#link()) return;
    // Output arrives accumulated and can come in bursts: send its tail, at most once per TOOL_UPDATE_MS.
    const id = String(e.toolCallId ?? "");
    const frame = { toolCallId: id, toolName: String(e.toolName ?? ""), result: e.partialResult };
    let u = this.#toolUpdates.get(id);
    if (!u) this.#toolUpdates.set(id, u = { last: 0, pending: null, timer: null });
    const update = u;
    const send = (f: PiEvent) => {
      update.last = Date.now();
      update.pending = null;
      this.#link()?.emit("tool_execution_update", {
        toolCallId: f.toolCallId,
        toolName: f.toolName,
        partial: resultText(f.result, PREVIEW_CHARS, true),
      }, 300 + PREVIEW_CHARS);
    };
    if (Date.now() - update.last >= TOOL_UPDATE_MS) return send(frame);
    update.pending = frame;
    update.timer ??= unref(setTimeout(() => {
      update.timer = null;
      if (update.pending) send(update.pending);
    }, TOOL_UPDATE_MS));
  }

  toolExecutionEnd(e: PiEvent): void {
    const link = this.#link();
    if (!link) return;
    const id = String(e.toolCallId ?? "");
    const u = this.#toolUpdates.get(id);
    this.#toolUpdates.delete(id);
    if (u?.timer) clearTimeout(u.timer);
    link.emit("tool_execution_end", {
      toolCallId: id,
      toolName: String(e.toolName ?? ""),
      isError: !!e.isError,
      resultPreview: resultText(e.result, PREVIEW_CHARS),
    }, 300 + PREVIEW_CHARS);
  }

  /** Send `session_info` when the name, model or thinking level changed. */
  checkInfo(ctx: PiContext | null, model?: PiContext["model"]): void {
    const link = this.#link();
    if (!link || !ctx) return;
    const name = field(ctx.sessionManager?.getSessionName?.(), FieldMax.sessionName);
    const m = model ?? ctx.model;
    const info = link.info;
    const id = field(m?.id, FieldMax.model), provider = field(m?.provider, FieldMax.model);
    const thinking = thinkingLevel(this.#pi);
    if (
      name === info.name && id === info.model && provider === info.provider &&
      thinking === (info.thinkingLevel ?? null)
    ) {
      return;
    }
    const models = id === info.model && provider === info.provider
      ? info.models
      : modelList({ ...ctx, model: m });
    link.info = { ...info, name, model: id, provider, thinkingLevel: thinking, models };
    link.emit("session_info", { session: link.info }, 300 + JSON.stringify(models ?? []).length);
  }
}
