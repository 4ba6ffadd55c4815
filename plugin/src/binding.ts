/**
 * One factory run's pi handlers: each maps a pi event onto the session's link and returns at once (pi awaits
 * handlers inside its event queue). State that must outlive the run lives in the link registry.
 */
import { FieldMax } from "../../lib/wire.ts";
import { Approvals } from "./approvals.ts";
import type { Config } from "./config.ts";
import { PREVIEW_CHARS, RENAME_POLL_MS, TOOL_UPDATE_MS } from "./constants.ts";
import { Delivery } from "./delivery.ts";
import { type DaemonFrame, Link } from "./link.ts";
import type { Logger } from "./log.ts";
import { mapRole, messageId, resultText, safeArgs, toMessage } from "./mapping.ts";
import { fromOf, Origins, type WebPrompt } from "./origins.ts";
import type { PiApi, PiContext, PiEvent } from "./pi_types.ts";
import { globalState, unref } from "./runtime.ts";
import { Settle } from "./settle.ts";
import { SettingsGuard } from "./settings_guard.ts";
import { field, modelList, snapshot } from "./snapshot.ts";
import { setModel, setName, type SwitchState } from "./steer.ts";

interface ToolUpdate {
  last: number;
  pending: PiEvent | null;
  timer: ReturnType<typeof setTimeout> | null;
}

/** Register this factory run's handlers on `pi`. */
export function bind(pi: PiApi, cfg: Config, log: Logger): void {
  const g = globalState();
  let link: Link | null = null;
  let ctxRef: PiContext | null = null;
  let renameTimer: ReturnType<typeof setInterval> | null = null;
  const ids = new Map<string, string>();
  // Delivered prompts waiting for their user message, and the ones matched at message_start (by message key).
  const origins = new Origins();
  const matched = new Map<string, WebPrompt | null>();
  const toolUpdates = new Map<string, ToolUpdate>();

  const guard =
    (name: string, fn: (e: PiEvent, ctx: PiContext) => unknown) => (e: PiEvent, ctx: PiContext) => {
      try {
        if (ctx) ctxRef = ctx;
        return fn(e ?? {}, ctx);
      } catch (err) {
        log(`handler ${name} failed`, err);
      }
    };
  const on = (name: string, fn: (e: PiEvent, ctx: PiContext) => unknown) => pi.on(name, guard(name, fn));

  const emitSettled = () => link?.emit("agent_settled", {});
  // pi 1.6.0's `on` returns an unsubscribe function; 0.73.1 has no agent_settled and returns nothing.
  let settle: Settle | null = null;
  const native = typeof pi.on(
    "agent_settled",
    guard("agent_settled", () => {
      if (settle?.nativeSettled()) emitSettled();
    }),
  ) === "function";
  settle = new Settle(native);
  const delivery = new Delivery(pi, settle, {
    ctx: () => (link ? ctxRef : null),
    onSettled: emitSettled,
    log,
    origins,
  });
  const approvals = new Approvals({
    link: () => link,
    localAsk: cfg.ask,
    timeoutMs: cfg.askTimeoutMs,
    log,
  });

  const thinkingLevel = () => {
    try {
      return field(pi.getThinkingLevel?.(), FieldMax.thinkingLevel);
    } catch {
      return null;
    }
  };
  function checkInfo(ctx: PiContext | null, model?: PiContext["model"]) {
    if (!link || !ctx) return;
    const name = field(ctx.sessionManager?.getSessionName?.(), FieldMax.sessionName);
    const m = model ?? ctx.model;
    const info = link.info;
    const id = field(m?.id, FieldMax.model), provider = field(m?.provider, FieldMax.model);
    const thinking = thinkingLevel();
    if (
      name === info.name && id === info.model && provider === info.provider &&
      thinking === (info.thinkingLevel ?? null)
    ) {
      return;
    }
    const models = id === info.model && provider === info.provider
      ? info.models
      : modelList({ ...ctx, model: m });
    link.info = {
      ...info,
      name,
      model: id,
      provider,
      thinkingLevel: thinking,
      models,
    };
    link.emit(
      "session_info",
      { session: link.info },
      300 + JSON.stringify(models ?? []).length,
    );
  }

  // pi 0.73.1's setModel rewrites the global default model: one guard per process undoes that.
  const settingsGuard = native ? null : (g.settingsGuard ??= new SettingsGuard(cfg.settingsFile, log));
  const switchState: SwitchState = { switching: false };
  const steerDeps = {
    pi,
    ctx: () => (link ? ctxRef : null),
    guard: settingsGuard,
    changed: () => checkInfo(ctxRef),
    log,
  };

  const binding = {
    command(f: DaemonFrame) {
      // Commands with a commandId are answered with command_result once pi took them (or refused).
      const answer = (error?: string) => link?.commandResult(f, error);
      if (f.type === "prompt" && typeof f.message === "string") {
        const deliverAs = f.deliverAs === "followUp" ? "followUp" : "steer";
        const images = Array.isArray(f.images) ? f.images : undefined;
        try {
          delivery.deliver({
            promptId: f.promptId,
            message: f.message,
            images,
            deliverAs,
            by: typeof f.by === "string" ? f.by : undefined,
            done: answer,
          });
        } catch (err) {
          log(`prompt ${f.promptId} failed`, err);
          answer(String((err as Error)?.message ?? err));
        }
      } else if (f.type === "set_model") {
        void setModel(f, steerDeps, switchState, answer);
      } else if (f.type === "set_name") {
        setName(f, steerDeps, answer);
      } else if (f.type === "approval_decision") {
        approvals.decide(f);
      } else if (f.type === "abort") {
        try {
          if (!ctxRef) return answer("no live pi session");
          ctxRef.abort();
          answer();
        } catch (err) {
          log("abort failed", err);
          answer(String((err as Error)?.message ?? err));
        }
      } else if (f.commandId) {
        answer(`unknown command ${JSON.stringify(String(f.type))}`);
      }
    },
    welcomed() {
      approvals.resendAll();
    },
    waiting: () => approvals.ids,
  };

  on("session_start", (_e, ctx) => {
    const info = snapshot(ctx, cfg, { thinkingLevel: thinkingLevel(), native });
    if (link?.sessionId === info.id) return checkInfo(ctx);
    link = g.links.get(info.id) ?? null;
    if (!link || link.closed) {
      link = new Link(cfg, info.id, info, log);
      g.links.set(info.id, link);
    } else {
      link.info = info;
    }
    link.binding = binding;
    link.start();
    // pi 0.73.1 tells extensions nothing about a /name typed while idle; 1.6.0 has session_info_changed.
    if (!native && !renameTimer) {
      renameTimer = unref(setInterval(() => {
        try {
          if (!settle.running) checkInfo(ctxRef);
        } catch { /* a stale ctx after a session switch */ }
      }, RENAME_POLL_MS));
    }
    delivery.pump();
  });
  on("session_shutdown", (e) => {
    const current = link;
    link = null;
    delivery.stop();
    if (renameTimer) clearInterval(renameTimer);
    renameTimer = null;
    if (!current) return;
    if (current.binding === binding) current.binding = null;
    current.forgetQueuedPrompts(); // delivery.stop() dropped them unanswered
    approvals.cancelAll();
    if (settle.shutdown()) current.emit("agent_settled", {}); // pi is idle by now: print mode ends here
    if (e.reason === "reload") return; // the same session comes back in the next factory run
    g.links.delete(current.sessionId);
    const done = current.close();
    log.flushSync();
    return done;
  });
  on("agent_start", (_e, ctx) => {
    if (settle.agentStart()) emitSettled();
    link?.emit("agent_start", {});
    checkInfo(ctx);
    delivery.pump();
  });
  on("agent_end", (e, ctx) => {
    const usage = { inputTokens: 0, outputTokens: 0, totalCost: 0 };
    for (const m of Array.isArray(e.messages) ? e.messages : []) {
      if (m?.role !== "assistant" || !m.usage) continue;
      usage.inputTokens += Number(m.usage.input) || 0;
      usage.outputTokens += Number(m.usage.output) || 0;
      usage.totalCost += Number(m.usage.cost?.total) || 0;
    }
    settle.agentEnd();
    link?.emit("agent_end", { usage });
    checkInfo(ctx);
    if (!native || delivery.queued) delivery.arm();
  });
  on("message_start", (e) => {
    if (!link) return;
    const m = e.message ?? {};
    const id = messageId(m, link.nextSeq);
    const key = `${m.role}:${m.timestamp}`;
    ids.set(key, id);
    // A user message pi emits for a delivered prompt says so, and who sent it.
    const web = m.role === "user" && origins.size ? origins.take(m.content) : null;
    if (m.role === "user") matched.set(key, web);
    const message = { role: mapRole(m.role), id };
    link.emit(
      "message_start",
      web ? { message, from: fromOf(web) } : { message },
    );
  });
  on("message_update", (e) => {
    const a = e.assistantMessageEvent;
    if (!link || !a) return;
    if (a.type === "text_delta") {
      link.emit("message_update", { delta: a.delta ?? "", kind: "text" });
    } else if (a.type === "thinking_delta") {
      link.emit("message_update", { delta: a.delta ?? "", kind: "thinking" });
    }
  });
  on("message_end", (e) => {
    if (!link) return;
    const m = e.message ?? {};
    const key = `${m.role}:${m.timestamp}`;
    const id = ids.get(key) ?? messageId(m, link.nextSeq);
    ids.delete(key);
    // Matched at message_start, or now when its start was not seen (a link opened in between).
    let web: WebPrompt | null = null;
    if (m.role === "user") {
      web = matched.has(key) ? matched.get(key)! : origins.size ? origins.take(m.content) : null;
      matched.delete(key);
    }
    const message = toMessage(m, id, web);
    let size = 300 + message.text.length + (message.thinking?.length ?? 0) +
      (message.images?.length ?? 0) * 200;
    for (const c of message.toolCalls) size += c.argsJson.length;
    link.emit(
      "message_end",
      web ? { message, from: fromOf(web) } : { message },
      size,
    );
  });
  on("tool_execution_start", (e) => {
    const { args, size } = safeArgs(e.args);
    link?.emit("tool_execution_start", {
      toolCallId: String(e.toolCallId ?? ""),
      toolName: String(e.toolName ?? ""),
      args,
    }, 300 + size);
  });
  on("tool_execution_update", (e) => {
    if (!link) return;
    // Output arrives accumulated and can come in bursts: send its tail, at most once per TOOL_UPDATE_MS.
    const id = String(e.toolCallId ?? "");
    const frame = {
      toolCallId: id,
      toolName: String(e.toolName ?? ""),
      result: e.partialResult,
    };
    let u = toolUpdates.get(id);
    if (!u) toolUpdates.set(id, u = { last: 0, pending: null, timer: null });
    const update = u;
    const send = (f: PiEvent) => {
      update.last = Date.now();
      update.pending = null;
      link?.emit("tool_execution_update", {
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
  });
  on("tool_execution_end", (e) => {
    if (!link) return;
    const id = String(e.toolCallId ?? "");
    const u = toolUpdates.get(id);
    toolUpdates.delete(id);
    if (u?.timer) clearTimeout(u.timer);
    link.emit("tool_execution_end", {
      toolCallId: id,
      toolName: String(e.toolName ?? ""),
      isError: !!e.isError,
      resultPreview: resultText(e.result, PREVIEW_CHARS),
    }, 300 + PREVIEW_CHARS);
  });
  on("tool_call", (e, ctx) =>
    approvals.toolCall(e, ctx)?.catch((err) => {
      // Fail closed: a tool that needs approval must not run because the plugin broke.
      log("approval failed", err);
      return { block: true, reason: "lvmh-agent could not ask for approval" };
    }));
  on("model_select", (e, ctx) => {
    // A model chosen in the terminal is that person's new default (pi's own behaviour): stop guarding.
    if (!switchState.switching && e.source !== "restore") {
      settingsGuard?.release();
    }
    checkInfo(ctx, e.model);
  });
  for (
    const name of [
      "input",
      "turn_end",
      "session_info_changed",
      "thinking_level_select",
      "session_compact",
    ]
  ) {
    on(name, (_e, ctx) => checkInfo(ctx));
  }
}
