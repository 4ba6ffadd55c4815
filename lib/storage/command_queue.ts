/**
 * Commands to a session's plugin, queued in the store so that any replica can send one and the replica holding
 * the plugin's socket delivers it. Two implementations (SQLite, PostgreSQL) pass one contract
 * (tests/process/command_queue_contract_test.ts).
 *
 * Order: each session numbers its commands from a counter moved inside the inserting transaction (the way the
 * event log numbers events), so commands commit in position order and `take` hands them out in enqueue order,
 * whoever enqueued them.
 *
 * Delivery: at least once to the socket. The holder (fenced by the epoch `EventLog.claimHolder` gave it) takes
 * pending commands, writes them to the plugin and acknowledges each. Within one epoch a command is handed out
 * once; after a takeover the new holder's `take` hands out again what the old one never acknowledged; an
 * acknowledged command is never handed out again. A redelivered frame reaches the plugin twice only when the
 * old socket wrote it before dying, and the plugin's own ids make most repeats harmless: a `prompt` carries a
 * `promptId` the plugin runs once (plugin/src/prompt_once.ts), an `approval_decision` names its `approvalId`
 * (a decided one is ignored), `policy`, `set_model`, `set_name` and `changes` set or read the same state again.
 * `commandId` (optional on prompt and abort, required on set_model, set_name and changes, absent from policy
 * and approval_decision) labels the `command_result` answer, and the plugin runs an abort, model or name
 * change once per commandId, answering a repeat again (plugin/src/daemon_commands.ts); `changes` only reads.
 *
 * Wake-up: `subscribe` calls back with a session id when that session has commands nobody took yet. The hint
 * is fast and lossy (PostgreSQL NOTIFY, or an in-process call on SQLite); a sweep of the table every few
 * hundred milliseconds finds what a lost hint missed. A new holder does not wait for a hint: it takes right
 * after `claimHolder`, which is when leftovers of the previous epoch are handed out.
 */
import type { DaemonFrame } from "../protocol.ts";
import { InvalidError } from "../errors.ts";

export { FencedError } from "./event_log.ts";

/** The daemon → plugin frames that are commands (the rest belong to the socket itself: welcome, ack, …). */
export type CommandFrame = Extract<
  DaemonFrame,
  { type: "prompt" | "abort" | "set_model" | "set_name" | "changes" | "policy" | "approval_decision" }
>;

/** A command as the queue hands it out. */
export interface QueuedCommand {
  sessionId: string;
  /** Its place in the session's commands: 1, 2, 3, … in enqueue order, never reused. */
  pos: number;
  frame: CommandFrame;
  /** When it was enqueued (ms epoch, the enqueuing replica's clock). */
  enqueuedAt: number;
  /** True when an earlier holder took it and never acknowledged it (it may have reached the plugin). */
  redelivered: boolean;
}

/** Who takes and acknowledges: the session's holder, by the epoch its `claimHolder` returned. */
export interface Holder {
  epoch: number;
}

/** Called with a session id that has commands nobody took yet (possibly more than once, possibly late). */
export type CommandsHint = (sessionId: string) => void;

/** How often the sweep looks for commands a lost hint missed. */
export const SWEEP_MS = 300;
/** The most commands one `take` hands out unless told otherwise. */
export const TAKE_LIMIT = 100;

/** The commands of every session. */
export interface CommandQueue {
  /** Which database holds it. */
  readonly kind: "sqlite" | "postgres";
  /**
   * Queue a command for a session's holder, after every command already queued for it. Other replicas' hints
   * are sent once the command is committed.
   * @throws {NotFoundError} for an unknown session.
   * @throws {InvalidError} for a frame of another session.
   */
  enqueue(sessionId: string, frame: CommandFrame): Promise<QueuedCommand>;
  /**
   * The session's commands this holder has not been handed yet and nobody acknowledged, oldest first, at most
   * `limit`; from now on they are this epoch's (another `take` by the same epoch skips them).
   * @throws {FencedError} when a newer holder claimed the session.
   * @throws {NotFoundError} for an unknown session.
   */
  take(sessionId: string, holder: Holder, limit?: number): Promise<QueuedCommand[]>;
  /**
   * Mark commands this epoch took as delivered: they are never handed out again.
   * @returns how many were newly acknowledged (a repeat, or a position this epoch never took, counts 0).
   * @throws {FencedError} when a newer holder claimed the session; nothing is then acknowledged.
   * @throws {NotFoundError} for an unknown session.
   */
  ack(sessionId: string, holder: Holder, positions: readonly number[]): Promise<number>;
  /** How many of the session's commands are not acknowledged yet (0 for an unknown session). */
  unacknowledged(sessionId: string): Promise<number>;
  /**
   * Hear of sessions with new commands: at once when a hint arrives, and from the sweep otherwise.
   * @returns a function that stops this subscription.
   */
  subscribe(onSessionHasCommands: CommandsHint): () => void;
  /**
   * Remove acknowledged commands acknowledged before `before` (ms epoch), and every command of a session that
   * no longer exists. Unacknowledged commands of existing sessions stay, however old.
   * @returns how many rows went.
   */
  prune(before: number): Promise<number>;
  /** Stop the sweep and the listener and release connections; the queue is unusable afterwards. */
  close(): Promise<void>;
}

/** The check both queues make before storing a command. */
export function commandText(sessionId: string, frame: CommandFrame): string {
  if (frame.sessionId !== sessionId) {
    throw new InvalidError(`Command for session "${frame.sessionId}" queued for session "${sessionId}"`);
  }
  return JSON.stringify(frame);
}

/**
 * The subscribers of one queue and the sweep that stands in for lost hints: while anyone subscribes, `find`
 * runs every `everyMs` (never two at once) and each session it returns is hinted to every subscriber.
 */
export class Wakeups {
  #subscribers = new Set<CommandsHint>();
  #find: () => Promise<string[]>;
  #everyMs: number;
  #timer: ReturnType<typeof setInterval> | undefined;
  #sweeping = false;

  constructor(find: () => Promise<string[]>, everyMs: number) {
    this.#find = find;
    this.#everyMs = everyMs;
  }

  get size(): number {
    return this.#subscribers.size;
  }

  add(fn: CommandsHint): () => void {
    this.#subscribers.add(fn);
    this.#timer ??= setInterval(() => void this.sweep(), this.#everyMs);
    return () => {
      this.#subscribers.delete(fn);
      if (!this.#subscribers.size) this.stop();
    };
  }

  /** Tell every subscriber; one that throws does not keep the others from hearing. */
  hint(sessionId: string): void {
    for (const fn of [...this.#subscribers]) {
      try {
        fn(sessionId);
      } catch {
        // A subscriber's own failure is its business; the sweep hints again while the commands wait.
      }
    }
  }

  /** Look now (after a reconnect, when hints may have been lost). */
  async sweep(): Promise<void> {
    if (this.#sweeping || !this.#subscribers.size) return;
    this.#sweeping = true;
    try {
      for (const id of await this.#find()) this.hint(id);
    } catch {
      // The database is away: the next tick tries again, and nothing is lost meanwhile (the rows wait).
    } finally {
      this.#sweeping = false;
    }
  }

  /** End the sweep and forget every subscriber. */
  stop(): void {
    this.#subscribers.clear();
    clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
