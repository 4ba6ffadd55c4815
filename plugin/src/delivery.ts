/**
 * Prompts from the daemon into pi, and the settle poll of pi 0.73.1: both wait for pi to be idle, so they
 * share one timer, armed only while something waits.
 */
import { POLL_MS } from "./constants.ts";
import type { FrameOf } from "./frames.ts";
import type { Logger } from "./log.ts";
import type { Origins } from "./origins.ts";
import type { PiApi, PiContent, PiContext } from "./pi_types.ts";
import { unref } from "./timers.ts";
import type { Settle } from "./settle.ts";

/** One prompt to deliver: a `prompt` frame's fields for pi, and who to tell once pi took it. */
export interface Prompt
  extends Pick<FrameOf<"prompt">, "promptId" | "message" | "images" | "deliverAs" | "by" | "source"> {
  /** Told once pi took the prompt (or refused it). */
  done?: (error?: string) => void;
}

/** The prompt queue and idle poll of one factory run. */
export class Delivery {
  #pi: PiApi;
  #settle: Settle;
  #ctx: () => PiContext | null;
  #onSettled: () => void;
  #log: Logger;
  #origins: Origins | null;
  #queue: Prompt[] = [];
  #timer: ReturnType<typeof setTimeout> | null = null;
  #active = true;
  /** Why the run stopped: the refusal of a prompt that comes after. */
  #stopped = "";

  constructor(
    pi: PiApi,
    settle: Settle,
    options: {
      ctx: () => PiContext | null;
      onSettled: () => void;
      log: Logger;
      /** Told of every prompt handed to pi, to find its user message later. */
      origins?: Origins;
    },
  ) {
    this.#pi = pi;
    this.#settle = settle;
    this.#ctx = options.ctx;
    this.#onSettled = options.onSettled;
    this.#log = options.log;
    this.#origins = options.origins ?? null;
  }

  /** Prompts waiting for pi. */
  get queued(): number {
    return this.#queue.length;
  }

  /**
   * Queue a prompt and deliver what can be delivered now. A throw (pi's ctx went stale) takes it out of the
   * queue again: the caller refuses it, and a refused prompt must not reach pi later as well.
   */
  deliver(p: Prompt): void {
    if (!this.#active) return p.done?.(this.#stopped);
    this.#queue.push(p);
    try {
      this.pump();
    } catch (err) {
      const i = this.#queue.indexOf(p);
      if (i >= 0) this.#queue.splice(i, 1);
      throw err;
    }
  }

  /** Deliver what can be delivered and check for a settle; arms the poll when something must wait. */
  pump(): void {
    const ctx = this.#ctx();
    if (!this.#active || !ctx) return;
    const idle = () => ctx.isIdle();
    while (this.#queue.length) {
      const p = this.#queue[0];
      // Between agent_end and idle a queued message can get stuck (pi 0.73.1), so wait for real idle;
      // after an idle send, wait for its agent_start so a second prompt cannot race it.
      if (
        !this.#settle.running && !this.#settle.mayStartRun(Date.now(), idle)
      ) return this.arm();
      this.#queue.shift(); // first: a prompt pi refuses must not block the ones behind it
      // Before sending: pi may emit the user message before sendUserMessage returns.
      const origin = this.#origins?.add(p);
      try {
        const content = promptContent(p);
        if (this.#settle.running) {
          this.#pi.sendUserMessage(content, { deliverAs: p.deliverAs });
        } else {
          this.#settle.startedFromIdle(Date.now());
          this.#pi.sendUserMessage(content);
        }
        p.done?.();
      } catch (err) {
        if (origin) this.#origins?.drop(origin);
        this.#log(`prompt ${p.promptId} refused by pi`, err);
        p.done?.(String((err as Error)?.message ?? err));
      }
    }
    const check = this.#settle.check(Date.now(), false, idle);
    if (check === "settled") this.#onSettled();
    else if (check === "wait") this.arm();
  }

  /** Poll again in POLL_MS (once). */
  arm(): void {
    if (!this.#active) return;
    this.#timer ??= unref(setTimeout(() => {
      this.#timer = null;
      try {
        this.pump();
      } catch (err) {
        this.#log("prompt delivery failed", err);
      }
    }, POLL_MS));
  }

  /**
   * The factory run ends: no more polls, and every prompt still queued (pi never saw it) is refused with
   * `reason`. Its sender waits for an answer and may then send it again to the next run (a `/reload` keeps
   * the daemon's socket open, so nothing else would tell it). @returns how many were refused
   */
  stop(reason: string): number {
    this.#active = false;
    this.#stopped = reason;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    const dropped = this.#queue.splice(0);
    for (const p of dropped) {
      this.#log(`prompt ${p.promptId} not delivered: ${reason}`);
      try {
        p.done?.(reason);
      } catch (err) {
        this.#log(`prompt ${p.promptId}: its refusal failed`, err);
      }
    }
    return dropped.length;
  }
}

/** A prompt as pi's `sendUserMessage` takes it: the text alone, or text and image parts. */
function promptContent(p: Prompt): string | PiContent[] {
  if (!p.images?.length) return p.message;
  return [
    { type: "text", text: p.message },
    ...p.images.map((i) => ({
      type: "image" as const,
      data: String(i.data),
      mimeType: String(i.mimeType),
    })),
  ];
}
