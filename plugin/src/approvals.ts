/**
 * Tool approvals: a pi `tool_call` for a tool in the ask set (the daemon's, plus LVMH_ASK) is reported as an
 * `approval_request` and waits for the first answer: the daemon's `approval_decision` (a person in the
 * browser), the terminal (`ctx.ui.select` in the TUI), pi's abort signal, or LVMH_ASK_TIMEOUT when set.
 * The answer is reported as `approval_resolved`. While the daemon is unreachable the call keeps waiting;
 * after every welcome each unresolved request is sent again with its own approvalId and seq.
 */
import { FieldMax } from "../../lib/wire.ts";
import { TITLE_ARGS_CHARS } from "./constants.ts";
import type { EventFrame } from "./buffer.ts";
import type { AskSet, EventPayload, FrameOf } from "./frames.ts";
import type { Link } from "./link.ts";
import type { Logger } from "./log.ts";
import { clip, safeArgs } from "./mapping.ts";
import type { PiContext, PiEvent } from "./pi_types.ts";

/** What a `tool_call` handler returns to stop the tool. */
export interface Block {
  block: true;
  reason: string;
}

/** How a wait ended: what `approval_resolved` reports, and the reason a person gave. */
interface Outcome extends Pick<EventPayload<"approval_resolved">, "decision" | "by" | "source"> {
  reason?: string;
}

interface Pending {
  frame: EventFrame;
  finish(o: Outcome): void;
}

/** Terminal choices, in the order shown. */
const APPROVE = "Approve";
const REJECT = "Reject";

/** The pending approvals of one factory run. */
export class Approvals {
  #link: () => Link | null;
  #localAsk: AskSet;
  #timeoutMs: number;
  #log: Logger;
  #uuid: () => string;
  #pending = new Map<string, Pending>();

  /**
   * @param options.link the session's link now (null before session_start and after shutdown)
   * @param options.localAsk LVMH_ASK: asked on top of the daemon's set, never instead of it
   * @param options.timeoutMs LVMH_ASK_TIMEOUT in ms; 0 waits for ever
   */
  constructor(options: {
    link: () => Link | null;
    localAsk: AskSet;
    timeoutMs: number;
    log: Logger;
    uuid?: () => string;
  }) {
    this.#link = options.link;
    this.#localAsk = options.localAsk;
    this.#timeoutMs = options.timeoutMs;
    this.#log = options.log;
    this.#uuid = options.uuid ?? (() => crypto.randomUUID());
  }

  /** Requests still waiting for an answer. */
  get waiting(): number {
    return this.#pending.size;
  }

  /** The approval ids still waiting for an answer. */
  get ids(): string[] {
    return [...this.#pending.keys()];
  }

  /** Whether `toolName` needs a person's approval: in the daemon's ask set or in LVMH_ASK. */
  asks(toolName: string): boolean {
    const daemon = this.#link()?.policy ?? [];
    const has = (set: AskSet) => set === "all" || set.includes(toolName);
    return has(daemon) || has(this.#localAsk);
  }

  /**
   * pi's `tool_call`: undefined at once when the tool is not gated, else a promise of undefined (run it) or
   * a block, settled by the first answer.
   */
  toolCall(e: PiEvent, ctx: PiContext): Promise<Block | undefined> | undefined {
    const link = this.#link();
    const toolName = String(e.toolName ?? "");
    if (!link) return undefined;
    if (this.asks(toolName)) return this.#ask(link, e, ctx);
    if (link.policyKnown) return undefined;
    // The daemon's ask set comes with its first welcome: a call before it waits (bounded) to know.
    return link.whenPolicyKnown.then(
      () => (this.asks(toolName) ? this.#ask(link, e, ctx) : undefined),
    );
  }

  #ask(link: Link, e: PiEvent, ctx: PiContext): Promise<Block | undefined> {
    const toolName = String(e.toolName ?? "").slice(0, FieldMax.toolName);
    const approvalId = this.#uuid();
    const { args, size } = safeArgs(e.input);
    const frame = link.emitFrame("approval_request", {
      approvalId,
      toolCallId: String(e.toolCallId ?? "").slice(0, FieldMax.toolCallId),
      toolName,
      args,
    }, 300 + size);
    const title = `lvmh: allow ${toolName} ${clip(JSON.stringify(args) ?? "", TITLE_ARGS_CHARS)}?`;
    return this.#wait(frame, ctx, title).then((o) => {
      // Sent now, not on the next turn: pi runs the tool as soon as this returns (the UI's "delivered").
      (this.#link() ?? link).emitNow("approval_resolved", {
        approvalId,
        decision: o.decision,
        by: o.by.slice(0, FieldMax.by),
        source: o.source,
      });
      if (o.decision === "approve") return undefined;
      return {
        block: true,
        reason: `Rejected by ${o.by}${o.reason ? `: ${o.reason}` : ""}`,
      };
    });
  }

  /**
   * The session's budget is reached: a card of its own kind (`kind: "budget"`, toolName `budget`) waits for
   * the first answer like a tool call's. Resolves true when approved.
   */
  askBudget(ctx: PiContext, args: Record<string, unknown>, title: string): Promise<boolean> {
    const link = this.#link();
    if (!link) return Promise.resolve(false);
    const approvalId = this.#uuid();
    const frame = link.emitFrame("approval_request", {
      approvalId,
      toolCallId: "",
      toolName: "budget",
      args,
      kind: "budget",
    }, 600);
    return this.#wait(frame, ctx, title).then((o) => {
      (this.#link() ?? link).emitNow("approval_resolved", {
        approvalId,
        decision: o.decision,
        by: o.by.slice(0, FieldMax.by),
        source: o.source,
      });
      return o.decision === "approve";
    });
  }

  /** The daemon's `approval_decision`; one for an unknown or already answered request is ignored. */
  decide(f: FrameOf<"approval_decision">): void {
    const p = this.#pending.get(String(f.approvalId));
    if (!p || (f.decision !== "approve" && f.decision !== "reject")) return;
    p.finish({
      decision: f.decision,
      by: typeof f.by === "string" && f.by ? f.by : "the daemon",
      source: "web",
      reason: typeof f.reason === "string" && f.reason ? f.reason : undefined,
    });
  }

  /** After a welcome: every unresolved request again, same approvalId and seq. */
  resendAll(): void {
    const link = this.#link();
    if (!link) return;
    for (const p of this.#pending.values()) link.resend(p.frame);
  }

  /** The session ends: nothing will answer, so every wait ends as an abort (the tools do not run). */
  cancelAll(): void {
    for (const p of [...this.#pending.values()]) {
      p.finish({ decision: "reject", by: "abort", source: "abort" });
    }
  }

  #wait(frame: EventFrame, ctx: PiContext, title: string): Promise<Outcome> {
    const approvalId = frame.approvalId as string;
    return new Promise<Outcome>((resolve) => {
      const signal = ctx?.signal;
      const dialog = new AbortController();
      let timer: ReturnType<typeof setTimeout> | undefined;
      // Every other timer of the plugin is unref'd; this one keeps Node (pi's print mode) alive while a
      // person is asked, since nothing else may be left to hold the event loop.
      const keepAlive = setInterval(() => {}, 1 << 30);
      const onAbort = () => finish({ decision: "reject", by: "abort", source: "abort" });
      const finish = (o: Outcome) => {
        if (this.#pending.get(approvalId)?.frame !== frame) return; // first answer wins
        this.#pending.delete(approvalId);
        clearTimeout(timer);
        clearInterval(keepAlive);
        signal?.removeEventListener("abort", onAbort);
        dialog.abort(); // withdraw the terminal question
        resolve(o);
      };
      this.#pending.set(approvalId, { frame, finish });
      if (signal?.aborted) return onAbort();
      signal?.addEventListener("abort", onAbort, { once: true });
      if (this.#timeoutMs > 0) {
        timer = setTimeout(
          () => finish({ decision: "reject", by: "timeout", source: "timeout" }),
          this.#timeoutMs,
        );
      }
      if (ctx?.hasUI && typeof ctx.ui?.select === "function") {
        ctx.ui.select(title, [APPROVE, REJECT], { signal: dialog.signal }).then(
          (choice) => {
            if (dialog.signal.aborted) return; // withdrawn: another answer came first
            finish({
              decision: choice === APPROVE ? "approve" : "reject",
              by: "terminal",
              source: "terminal",
            });
          },
          (err) => this.#log("terminal approval failed", err),
        );
      }
    });
  }
}
