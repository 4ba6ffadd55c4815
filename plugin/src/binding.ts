/**
 * One factory run's pi handlers: each maps a pi event onto the session's link and returns at once (pi awaits
 * handlers inside its event queue). State that must outlive the run lives in the link registry. This file
 * wires pi's hooks (every one guarded by `#on`) and the session's lifecycle; messages, tool runs and the
 * session's info become protocol events in `event_mapper.ts`, and a reached budget is held in `budget_gate.ts`.
 */
import { Approvals, type Block } from "./approvals.ts";
import { abortForBudget, budgetGate } from "./budget_gate.ts";
import type { Config } from "./config.ts";
import { NOT_SAVED_TEXT, RENAME_POLL_MS } from "./constants.ts";
import type { Binding } from "./daemon_commands.ts";
import { Delivery } from "./delivery.ts";
import { EventMapper } from "./event_mapper.ts";
import type { FrameOf } from "./frames.ts";
import { Link } from "./link.ts";
import type { Logger } from "./log.ts";
import { Origins } from "./origins.ts";
import type { PiApi, PiContext, PiEvent } from "./pi_types.ts";
import { processSlot } from "./process_slot.ts";
import { Settle } from "./settle.ts";
import { SettingsGuard } from "./settings_guard.ts";
import { snapshot, thinkingLevel } from "./snapshot.ts";
import { setModel, setName, type SteerDeps, type SwitchState } from "./steer.ts";
import { unref } from "./timers.ts";

/** The refusal of a prompt still queued for pi when its session shuts down. */
function notDelivered(reason: unknown): string {
  return reason === "reload"
    ? "pi is reloading; prompt not delivered"
    : `pi session ended (${String(reason ?? "shutdown").slice(0, 40)}); prompt not delivered`;
}

/** Register this factory run's handlers on `pi`. */
export function bind(pi: PiApi, cfg: Config, log: Logger): PiBinding {
  return new PiBinding(pi, cfg, log);
}

/** One factory run: its hooks on pi, the session's lifecycle, and the daemon's commands for the session it runs. */
export class PiBinding implements Binding {
  #pi: PiApi;
  #cfg: Config;
  #log: Logger;
  /** Every session's link in this process, by session id: a factory run finds its session's link here. */
  #links: Map<string, Link>;
  #link: Link | null = null;
  #ctx: PiContext | null = null;
  #renameTimer: ReturnType<typeof setInterval> | null = null;
  /** Delivered prompts waiting for their user message: the delivery adds them, the event mapper takes them. */
  #origins = new Origins();
  #events: EventMapper;
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
    this.#events = new EventMapper(pi, {
      link: () => this.#link,
      origins: this.#origins,
      overBudget: () => {
        if (this.#ctx) abortForBudget(this.#ctx, log);
      },
    });

    this.#on("session_start", (_e, ctx) => this.sessionStart(ctx));
    this.#on("session_shutdown", (e) => this.sessionShutdown(e));
    this.#on("agent_start", (_e, ctx) => this.agentStart(ctx));
    this.#on("agent_end", (e, ctx) => this.agentEnd(e, ctx));
    const events = this.#events;
    this.#on("message_start", (e) => events.messageStart(e));
    this.#on("message_update", (e) => events.messageUpdate(e));
    this.#on("message_end", (e) => events.messageEnd(e));
    this.#on("tool_execution_start", (e) => events.toolExecutionStart(e));
    this.#on("tool_execution_update", (e) => events.toolExecutionUpdate(e));
    this.#on("tool_execution_end", (e) => events.toolExecutionEnd(e));
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
    if (ctx && this.#link?.budget.stopReason && this.#settle.running) abortForBudget(ctx, this.#log);
  }

  // ---------------------------------------------------------------------------------------------
  // pi's events

  sessionStart(ctx: PiContext): void {
    const info = snapshot(ctx, this.#cfg, { thinkingLevel: thinkingLevel(this.#pi), native: this.#native });
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
    if (this.#link?.budget.stopReason) abortForBudget(ctx, this.#log);
    this.#checkInfo(ctx);
    this.#delivery.pump();
  }

  agentEnd(e: PiEvent, ctx: PiContext): void {
    this.#settle.agentEnd();
    this.#events.agentEnd(e);
    this.#checkInfo(ctx);
    if (!this.#native || this.#delivery.queued) this.#delivery.arm();
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

  /** The budget's say before a tool call or a turn (`budgetGate`), for the session this run has now. */
  #budgetGate(ctx: PiContext): Promise<Block | undefined> | undefined {
    return budgetGate(ctx, { guard: this.#link?.budget, approvals: this.#approvals, log: this.#log });
  }

  /** The answer to a command: a `command_result` when the frame carries a commandId. */
  #answer(f: FrameOf<"prompt" | "abort" | "set_model" | "set_name">): (error?: string) => void {
    return (error) => this.#link?.commandResult(f, error);
  }

  #emitSettled(): void {
    this.#link?.emit("agent_settled", {});
  }

  /** Send `session_info` when the name, model or thinking level changed. */
  #checkInfo(ctx: PiContext | null, model?: PiContext["model"]): void {
    this.#events.checkInfo(ctx, model);
  }
}
