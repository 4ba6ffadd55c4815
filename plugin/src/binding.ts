/**
 * One factory run's pi handlers: each maps a pi event onto the session's link and returns at once (pi awaits
 * handlers inside its event queue). State that must outlive the run lives in the link registry.
 */
import { FieldMax } from "../../lib/wire.ts";
import { Approvals } from "./approvals.ts";
import type { Config } from "./config.ts";
import { NOT_SAVED_TEXT, PREVIEW_CHARS, RENAME_POLL_MS, TOOL_UPDATE_MS } from "./constants.ts";
import { Delivery } from "./delivery.ts";
import type { FrameOf } from "./frames.ts";
import type { Binding } from "./daemon_commands.ts";
import { Link } from "./link.ts";
import type { Logger } from "./log.ts";
import { mapRole, messageId, resultText, safeArgs, toMessage } from "./mapping.ts";
import { fromOf, Origins, type WebPrompt } from "./origins.ts";
import type { PiApi, PiContext, PiEvent } from "./pi_types.ts";
import { processSlot } from "./process_slot.ts";
import { Settle } from "./settle.ts";
import { SettingsGuard } from "./settings_guard.ts";
import { field, modelList, snapshot } from "./snapshot.ts";
import { setModel, setName, type SteerDeps, type SwitchState } from "./steer.ts";
import { unref } from "./timers.ts";
import { messageUsage } from "./budget.ts";

/** The refusal of a prompt still queued for pi when its session shuts down. */
function notDelivered(reason: unknown): string {
  return reason === "reload"
    ? "pi is reloading; prompt not delivered"
    : `pi session ended (${String(reason ?? "shutdown").slice(0, 40)}); prompt not delivered`;
}

interface ToolUpdate {
  last: number;
  pending: PiEvent | null;
  timer: ReturnType<typeof setTimeout> | null;
}

/** Register this factory run's handlers on `pi`. */
export function bind(pi: PiApi, cfg: Config, log: Logger): PiBinding {
  return new PiBinding(pi, cfg, log);
}

/** One factory run: a method per pi event it handles, and the daemon's commands for the session it runs. */
export class PiBinding implements Binding {
  #pi: PiApi;
  #cfg: Config;
  #log: Logger;
  /** Every session's link in this process, by session id: a factory run finds its session's link here. */
  #links: Map<string, Link>;
  #link: Link | null = null;
  #ctx: PiContext | null = null;
  #renameTimer: ReturnType<typeof setInterval> | null = null;
  #ids = new Map<string, string>();
  // Delivered prompts waiting for their user message, and the ones matched at message_start (by message key).
  #origins = new Origins();
  #matched = new Map<string, WebPrompt | null>();
  #toolUpdates = new Map<string, ToolUpdate>();
  /** pi 1.6.0 emits agent_settled itself; 0.73.1 does not, and the run polls for idle instead. */
  #native: boolean;
  /** A `not_saved` session_notice is still to be sent (config `notSaved`). */
  #notSaved: boolean;
  #settle: Settle;
  #delivery: Delivery;
  #approvals: Approvals;
  /** pi 0.73.1's setModel rewrites the global default model: one guard per process undoes that. */
  #settingsGuard: SettingsGuard | null;
  #switchState: SwitchState = { switching: false };
  #steer: SteerDeps;

  /** Registers the handlers on `pi` (agent_settled first: what pi answers tells its version). */
  constructor(pi: PiApi, cfg: Config, log: Logger) {
    this.#pi = pi;
    this.#cfg = cfg;
    this.#notSaved = cfg.notSaved;
    this.#log = log;
    this.#links = processSlot("links", () => new Map<string, Link>());
    // pi 1.6.0's `on` returns an unsubscribe function; 0.73.1 has no agent_settled and returns nothing.
    let settle: Settle | null = null;
    this.#native = typeof this.#on("agent_settled", () => {
      if (settle?.nativeSettled()) this.#emitSettled();
    }) === "function";
    this.#settle = settle = new Settle(this.#native);
    const ctx = () => (this.#link ? this.#ctx : null);
    this.#delivery = new Delivery(pi, settle, {
      ctx,
      onSettled: () => this.#emitSettled(),
      log,
      origins: this.#origins,
    });
    this.#approvals = new Approvals({
      link: () => this.#link,
      localAsk: cfg.ask,
      timeoutMs: cfg.askTimeoutMs,
      log,
    });
    this.#settingsGuard = this.#native
      ? null
      : processSlot("settingsGuard", () => new SettingsGuard(cfg.settingsFile, log));
    this.#steer = { pi, ctx, guard: this.#settingsGuard, changed: () => this.#checkInfo(this.#ctx), log };

    this.#on("session_start", (_e, ctx) => this.sessionStart(ctx));
    this.#on("session_shutdown", (e) => this.sessionShutdown(e));
    this.#on("agent_start", (_e, ctx) => this.agentStart(ctx));
    this.#on("agent_end", (e, ctx) => this.agentEnd(e, ctx));
    this.#on("message_start", (e) => this.messageStart(e));
    this.#on("message_update", (e) => this.messageUpdate(e));
    this.#on("message_end", (e) => this.messageEnd(e));
    this.#on("tool_execution_start", (e) => this.toolExecutionStart(e));
    this.#on("tool_execution_update", (e) => this.toolExecutionUpdate(e));
    this.#on("tool_execution_end", (e) => this.toolExecutionEnd(e));
    this.#on("tool_call", (e, ctx) => this.toolCall(e, ctx));
    // Before each model request: a reached budget holds the turn (ask) or ends the run (stop).
    this.#on("context", (_e, ctx) => this.#budgetGate(ctx)?.then(() => undefined));
    this.#on("model_select", (e, ctx) => this.modelSelect(e, ctx));
    for (
      const name of ["input", "turn_end", "session_info_changed", "thinking_level_select", "session_compact"]
    ) {
      this.#on(name, (_e, ctx) => this.#checkInfo(ctx));
    }
  }

  // ---------------------------------------------------------------------------------------------
  // The daemon's commands (`Binding`), called by the link of the session this run has

  prompt(f: FrameOf<"prompt">): void {
    // Commands with a commandId are answered with command_result once pi took them (or refused).
    const answer = this.#answer(f);
    if (typeof f.message !== "string") return answer(`unknown command ${JSON.stringify(String(f.type))}`);
    const deliverAs = f.deliverAs === "followUp" ? "followUp" : "steer";
    const images = Array.isArray(f.images) ? f.images : undefined;
    try {
      this.#delivery.deliver({
        promptId: f.promptId,
        message: f.message,
        images,
        deliverAs,
        by: typeof f.by === "string" ? f.by : undefined,
        source: f.source,
        done: answer,
      });
    } catch (err) {
      this.#log(`prompt ${f.promptId} failed`, err);
      answer(String((err as Error)?.message ?? err));
    }
  }

  abort(f: FrameOf<"abort">): void {
    const answer = this.#answer(f);
    try {
      if (!this.#ctx) return answer("no live pi session");
      this.#ctx.abort();
      answer();
    } catch (err) {
      this.#log("abort failed", err);
      answer(String((err as Error)?.message ?? err));
    }
  }

  setModel(f: FrameOf<"set_model">): void {
    void setModel(f, this.#steer, this.#switchState, this.#answer(f));
  }

  setName(f: FrameOf<"set_name">): void {
    setName(f, this.#steer, this.#answer(f));
  }

  approvalDecision(f: FrameOf<"approval_decision">): void {
    this.#approvals.decide(f);
  }

  welcomed(): void {
    this.#approvals.resendAll();
  }

  waiting(): string[] {
    return this.#approvals.ids;
  }

  budgetChanged(): void {
    // The daily cap (or a lowered budget) stops a run that is going on now.
    const ctx = this.#ctx;
    if (ctx && this.#link?.budget.stopReason && this.#settle.running) this.#abortForBudget(ctx);
  }

  // ---------------------------------------------------------------------------------------------
  // pi's events

  sessionStart(ctx: PiContext): void {
    const info = snapshot(ctx, this.#cfg, { thinkingLevel: this.#thinkingLevel(), native: this.#native });
    if (this.#link?.sessionId === info.id) return this.#checkInfo(ctx);
    let link = this.#links.get(info.id) ?? null;
    if (!link || link.closed) {
      link = new Link(this.#cfg, info.id, info, this.#log);
      this.#links.set(info.id, link);
    } else {
      link.info = info;
    }
    this.#link = link;
    link.binding = this;
    link.start();
    if (this.#notSaved) {
      // Once per process: the first session is the resumed one; a later /new or /resume is pi's own.
      this.#notSaved = false;
      link.emit("session_notice", { kind: "not_saved", text: NOT_SAVED_TEXT });
    }
    // pi 0.73.1 tells extensions nothing about a /name typed while idle; 1.6.0 has session_info_changed.
    if (!this.#native && !this.#renameTimer) {
      this.#renameTimer = unref(setInterval(() => {
        try {
          if (!this.#settle.running) this.#checkInfo(this.#ctx);
        } catch { /* a stale ctx after a session switch */ }
      }, RENAME_POLL_MS));
    }
    this.#delivery.pump();
  }

  sessionShutdown(e: PiEvent): Promise<void> | undefined {
    const current = this.#link;
    // Prompts pi never got are refused while the link is still this run's (their answers go through it): the
    // daemon sends a refused one again, and after a /reload, whose socket stays open, the next run takes it.
    this.#delivery.stop(notDelivered(e.reason));
    this.#link = null;
    if (this.#renameTimer) clearInterval(this.#renameTimer);
    this.#renameTimer = null;
    if (!current) return;
    if (current.binding === this) current.binding = null;
    current.forgetQueuedPrompts(); // refused above, so already forgotten: this only makes sure of it
    this.#approvals.cancelAll();
    if (this.#settle.shutdown()) current.emit("agent_settled", {}); // pi is idle by now: print mode ends here
    if (e.reason === "reload") return; // the same session comes back in the next factory run
    this.#links.delete(current.sessionId);
    const done = current.close();
    this.#log.flushSync();
    return done;
  }

  agentStart(ctx: PiContext): void {
    if (this.#settle.agentStart()) this.#emitSettled();
    this.#link?.emit("agent_start", {});
    if (this.#link?.budget.stopReason) this.#abortForBudget(ctx);
    this.#checkInfo(ctx);
    this.#delivery.pump();
  }

  agentEnd(e: PiEvent, ctx: PiContext): void {
    const usage = { inputTokens: 0, outputTokens: 0, totalCost: 0 };
    for (const m of Array.isArray(e.messages) ? e.messages : []) {
      if (m?.role !== "assistant" || !m.usage) continue;
      usage.inputTokens += Number(m.usage.input) || 0;
      usage.outputTokens += Number(m.usage.output) || 0;
      usage.totalCost += Number(m.usage.cost?.total) || 0;
    }
    this.#settle.agentEnd();
    this.#link?.emit("agent_end", { usage });
    this.#checkInfo(ctx);
    if (!this.#native || this.#delivery.queued) this.#delivery.arm();
  }

  messageStart(e: PiEvent): void {
    const link = this.#link;
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
    const a = e.assistantMessageEvent;
    if (!this.#link || !a) return;
    if (a.type === "text_delta") this.#link.emit("message_update", { delta: a.delta ?? "", kind: "text" });
    else if (a.type === "thinking_delta") {
      this.#link.emit("message_update", { delta: a.delta ?? "", kind: "thinking" });
    }
  }

  messageEnd(e: PiEvent): void {
    const link = this.#link;
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
      if (link.budget.stopReason && this.#ctx) this.#abortForBudget(this.#ctx);
    }
    let size = 300 + message.text.length + (message.thinking?.length ?? 0) +
      (message.images?.length ?? 0) * 200;
    for (const c of message.toolCalls) size += c.argsJson.length;
    link.emit("message_end", web ? { message, from: fromOf(web) } : { message }, size);
  }

  toolExecutionStart(e: PiEvent): void {
    const { args, size } = safeArgs(e.args);
    this.#link?.emit("tool_execution_start", {
      toolCallId: String(e.toolCallId ?? ""),
      toolName: String(e.toolName ?? ""),
      args,
    }, 300 + size);
  }

  toolExecutionUpdate(e: PiEvent): void {
    if (!this.#link) return;
    // Output arrives accumulated and can come in bursts: send its tail, at most once per TOOL_UPDATE_MS.
    const id = String(e.toolCallId ?? "");
    const frame = { toolCallId: id, toolName: String(e.toolName ?? ""), result: e.partialResult };
    let u = this.#toolUpdates.get(id);
    if (!u) this.#toolUpdates.set(id, u = { last: 0, pending: null, timer: null });
    const update = u;
    const send = (f: PiEvent) => {
      update.last = Date.now();
      update.pending = null;
      this.#link?.emit("tool_execution_update", {
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
    if (!this.#link) return;
    const id = String(e.toolCallId ?? "");
    const u = this.#toolUpdates.get(id);
    this.#toolUpdates.delete(id);
    if (u?.timer) clearTimeout(u.timer);
    this.#link.emit("tool_execution_end", {
      toolCallId: id,
      toolName: String(e.toolName ?? ""),
      isError: !!e.isError,
      resultPreview: resultText(e.result, PREVIEW_CHARS),
    }, 300 + PREVIEW_CHARS);
  }

  toolCall(e: PiEvent, ctx: PiContext): Promise<unknown> | undefined {
    const gate = this.#budgetGate(ctx);
    if (gate) return gate.then((block) => block ?? this.#toolApproval(e, ctx));
    return this.#toolApproval(e, ctx);
  }

  #toolApproval(e: PiEvent, ctx: PiContext): Promise<unknown> | undefined {
    return this.#approvals.toolCall(e, ctx)?.catch((err) => {
      // Fail closed: a tool that needs approval must not run because the plugin broke.
      this.#log("approval failed", err);
      return { block: true, reason: "lvmh-agent could not ask for approval" };
    });
  }

  modelSelect(e: PiEvent, ctx: PiContext): void {
    // A model chosen in the terminal is that person's new default (pi's own behaviour): stop guarding.
    if (!this.#switchState.switching && e.source !== "restore") this.#settingsGuard?.release();
    this.#checkInfo(ctx, e.model);
  }

  // ---------------------------------------------------------------------------------------------

  /** Register `fn` for pi's event `name`: it remembers pi's ctx, and a throw is logged, never reaches pi. */
  #on(name: string, fn: (e: PiEvent, ctx: PiContext) => unknown): unknown {
    return this.#pi.on(name, (e: PiEvent, ctx: PiContext) => {
      try {
        if (ctx) this.#ctx = ctx;
        return fn(e ?? {}, ctx);
      } catch (err) {
        this.#log(`handler ${name} failed`, err);
      }
    });
  }

  /**
   * The budget's say before a tool call or a turn: undefined when within it; else a promise of a block (the
   * run stops) or undefined (a person approved another step of the budget).
   */
  #budgetGate(ctx: PiContext): Promise<{ block: true; reason: string } | undefined> | undefined {
    const guard = this.#link?.budget;
    if (!guard) return undefined;
    const stop = guard.stopReason;
    if (stop) {
      this.#abortForBudget(ctx);
      return Promise.resolve({ block: true, reason: stop });
    }
    if (!guard.mustAsk) return undefined;
    if (!guard.asking) {
      const asked = guard.limits;
      const { args, title } = guard.card();
      guard.asking = this.#approvals.askBudget(ctx, args, title).then((ok) => {
        if (ok) guard.raise(asked);
        return ok;
      }, (err) => {
        this.#log("budget approval failed", err);
        return false; // fail closed: a budget that cannot be asked about stops the run
      }).finally(() => guard.asking = null);
    }
    return guard.asking.then((ok) => {
      if (ok) return undefined;
      this.#abortForBudget(ctx);
      return { block: true, reason: "Budget reached: the run was stopped" };
    });
  }

  /**
   * Abort the run now: before a model request (`context`) the request then fails at once. pi's abort waits
   * for the run to end, which this handler is part of, so it is not awaited.
   */
  #abortForBudget(ctx: PiContext): void {
    try {
      if (!ctx.isIdle()) {
        void Promise.resolve(ctx.abort()).catch((err) => this.#log("budget abort failed", err));
      }
    } catch (err) {
      this.#log("budget abort failed", err);
    }
  }

  /** The answer to a command: a `command_result` when the frame carries a commandId. */
  #answer(f: FrameOf<"prompt" | "abort" | "set_model" | "set_name">): (error?: string) => void {
    return (error) => this.#link?.commandResult(f, error);
  }

  #emitSettled(): void {
    this.#link?.emit("agent_settled", {});
  }

  #thinkingLevel(): string | null {
    try {
      return field(this.#pi.getThinkingLevel?.(), FieldMax.thinkingLevel);
    } catch {
      return null;
    }
  }

  /** Send `session_info` when the name, model or thinking level changed. */
  #checkInfo(ctx: PiContext | null, model?: PiContext["model"]): void {
    const link = this.#link;
    if (!link || !ctx) return;
    const name = field(ctx.sessionManager?.getSessionName?.(), FieldMax.sessionName);
    const m = model ?? ctx.model;
    const info = link.info;
    const id = field(m?.id, FieldMax.model), provider = field(m?.provider, FieldMax.model);
    const thinking = this.#thinkingLevel();
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
