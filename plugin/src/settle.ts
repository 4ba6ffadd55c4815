/**
 * When is a run really over? pi 1.6.0 says so (`agent_settled`); pi 0.73.1 does not, so there the plugin
 * polls `ctx.isIdle()` after `agent_end`. This state machine holds the rules for both, with no timers and no
 * I/O of its own: the caller feeds it pi's events and the clock, and emits `agent_settled` when it says so.
 */
import { START_WAIT_MS } from "./constants.ts";

/** The answer of one poll on pi 0.73.1. */
export type SettleCheck = "settled" | "wait" | "none";

/** Settle detection for one factory run. */
export class Settle {
  /** True on pi 1.6.0: pi reports agent_settled itself. */
  readonly native: boolean;
  #running = false;
  #pending = false;
  #awaitUntil = 0;

  constructor(native: boolean) {
    this.native = native;
  }

  /** Between agent_start and agent_end. */
  get running(): boolean {
    return this.#running;
  }

  /** A run ended and its settle is not reported yet. */
  get pending(): boolean {
    return this.#pending;
  }

  /**
   * pi started a run. Returns true when the previous run's settle must be reported first: pi 0.73.1 starts a
   * run only from idle, so a settle still pending here was missed by the poll (a prompt came within one poll).
   */
  agentStart(): boolean {
    const missed = this.#pending && !this.native;
    this.#running = true;
    this.#pending = false;
    this.#awaitUntil = 0;
    return missed;
  }

  /** pi ended a run: its settle is now pending. */
  agentEnd(): void {
    this.#running = false;
    this.#pending = true;
  }

  /** pi 1.6.0's agent_settled: true when it settles a run of ours (report it). */
  nativeSettled(): boolean {
    const was = this.#pending;
    this.#pending = false;
    return was;
  }

  /** The plugin sent a prompt to an idle pi at `now`: until its agent_start comes, pi only looks idle. */
  startedFromIdle(now: number): void {
    this.#awaitUntil = now + START_WAIT_MS;
  }

  /** Whether a prompt sent now would start a run of its own (pi idle, no start of ours in flight). */
  mayStartRun(now: number, isIdle: () => boolean): boolean {
    return this.#awaitUntil <= now && isIdle();
  }

  /**
   * One poll on pi 0.73.1: "settled" (report it now), "wait" (poll again), "none" (nothing to do).
   * @param queued prompts of ours wait to be delivered (they would start the next run)
   */
  check(now: number, queued: boolean, isIdle: () => boolean): SettleCheck {
    if (
      !this.#pending || this.native || this.#running || queued ||
      this.#awaitUntil > now
    ) return "none";
    if (!isIdle()) return "wait";
    this.#pending = false;
    return "settled";
  }

  /** The session shuts down: true when a pending settle must be reported (pi is idle by now). */
  shutdown(): boolean {
    const report = this.#pending && !this.#running;
    this.#pending = false;
    return report;
  }
}
