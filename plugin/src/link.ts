/**
 * One session's link to the daemon: its seq counter, its buffer and its socket. It outlives factory runs
 * (pi re-runs the factory on /new, /resume, /reload) and reconnects forever; emitting never does I/O (but
 * `emitNow`, for the one event whose arrival time the daemon shows). Its parts each own one thing: the socket
 * and its reconnects (`daemon_socket.ts`), the numbering, buffering and flushing of events (`outbox.ts`) and
 * the daemon's commands (`daemon_commands.ts`); the link holds the session's state and the transport's frames.
 */
import { Feature, FieldMax, PROTOCOL_VERSION } from "../../lib/wire.ts";
import type { EventFrame } from "./buffer.ts";
import type { Config } from "./config.ts";
import { POLICY_WAIT_MS, POLL_MS, SHUTDOWN_WAIT_MS } from "./constants.ts";
import { type Answerable, type Binding, DaemonCommands } from "./daemon_commands.ts";
import { DaemonSocket } from "./daemon_socket.ts";
import type {
  AgentEventType,
  AskSet,
  DaemonFrame,
  EventPayload,
  HelloFrameInput,
  SessionInfo,
} from "./frames.ts";
import { BudgetGuard } from "./budget.ts";
import type { Logger } from "./log.ts";
import { Outbox } from "./outbox.ts";
import { unref } from "./timers.ts";

/** `ask` if it is an ask set, else none (an older daemon, or a malformed field). */
function askSet(ask: unknown): AskSet {
  if (ask === "all") return "all";
  return Array.isArray(ask) ? ask.filter((t): t is string => typeof t === "string") : [];
}

/** One session's connection, seq counter and buffer. */
export class Link {
  readonly sessionId: string;
  info: SessionInfo;
  /** The factory run currently attached: receives the daemon's commands. */
  binding: Binding | null = null;
  /** The daemon's ask set for this session, from `welcome.policy` and `policy` frames (none until then). */
  policy: AskSet = [];
  /** Optional protocol features the daemon listed in its last `welcome`. */
  features: ReadonlySet<string> = new Set();
  /** The session's budget and what this process counted (outlives a /reload, like the link). */
  readonly budget = new BudgetGuard();
  /**
   * Settles at the first welcome, or POLICY_WAIT_MS after the link was made: until then the daemon's ask
   * set is unknown, and a tool call that may need approval waits for it rather than run unasked.
   */
  readonly whenPolicyKnown: Promise<void>;
  /** True once `whenPolicyKnown` settled. */
  policyKnown = false;
  #policyKnown!: () => void;
  #log: Logger;
  #socket: DaemonSocket;
  #outbox: Outbox;
  #commands: DaemonCommands;
  #closing: Promise<void> | null = null;

  constructor(cfg: Config, sessionId: string, info: SessionInfo, log: Logger) {
    this.#log = log;
    this.sessionId = sessionId;
    this.info = info;
    this.#socket = new DaemonSocket(cfg, sessionId, {
      log,
      hello: () => this.#hello(),
      onFrame: (text) => this.onFrame(text),
    });
    this.#outbox = new Outbox(cfg.stateDir, sessionId, {
      log,
      socket: this.#socket,
      batching: () => this.features.has(Feature.batch),
    });
    this.#commands = new DaemonCommands(this, log);
    this.whenPolicyKnown = new Promise((resolve) => {
      const known = () => {
        clearTimeout(timer);
        this.policyKnown = true;
        resolve();
      };
      const timer = unref(setTimeout(known, POLICY_WAIT_MS));
      this.#policyKnown = known;
    });
  }

  /** The seq the next event gets. */
  get nextSeq(): number {
    return this.#outbox.nextSeq;
  }

  /** True once `close()` finished: a new factory run makes a new link. */
  get closed(): boolean {
    return this.#socket.closed;
  }

  /**
   * Queue one event; returns its seq. Never does I/O itself.
   * @param size roughly how many characters the payload holds (for the buffer's memory bound)
   */
  emit<T extends AgentEventType>(type: T, payload: EventPayload<T>, size = 200): number {
    // Deltas are only useful live: the daemon never stores them, so offline ones are not kept (nor built).
    if (type === "message_update" && !this.#socket.ready) return this.#outbox.skip();
    return this.emitFrame(type, payload, size).seq;
  }

  /**
   * `emit`, sent at once on a ready socket instead of on the next `later` turn, with everything queued before
   * it (in seq order). For an event whose arrival time the daemon shows, emitted as pi is released: pi goes
   * on in the same turn (an approved tool starts), and the deferred flush waited behind that work, 6-15 ms.
   */
  emitNow<T extends AgentEventType>(type: T, payload: EventPayload<T>, size = 200): number {
    const seq = this.emit(type, payload, size);
    if (this.#socket.ready) this.#outbox.flush();
    return seq;
  }

  /** `emit`, returning the frame itself (to send it again later with the same seq). */
  emitFrame<T extends AgentEventType>(type: T, payload: EventPayload<T>, size = 200): EventFrame {
    return this.#outbox.push(type, payload, size);
  }

  /**
   * Send `ev` again on the current socket, unless the buffer's replay sends it anyway. The daemon's log
   * ignores the seq it already has, but answers the frame itself (a stored approval decision).
   */
  resend(ev: EventFrame): void {
    this.#outbox.resend(ev);
  }

  /** Start connecting (idempotent). */
  start(): void {
    this.#socket.start();
  }

  /** Send `bye`, wait (bounded) for the daemon to take everything, then close for good. */
  close(): Promise<void> {
    if (this.#closing) return this.#closing;
    const byeSeq = this.emit("bye", { reason: "shutdown" });
    this.#outbox.writeSync();
    this.#socket.retire();
    if (this.#socket.ws === null) {
      // No socket: nothing can be delivered, so do not hold pi's exit at all.
      this.#shutdown();
      this.#closing = Promise.resolve();
      return this.#closing;
    }
    // These timers stay referenced: pi awaits this promise, and an unreferenced wait could let Node exit
    // in the middle of pi's own shutdown. SHUTDOWN_WAIT_MS bounds them.
    this.#closing = new Promise((resolve) => {
      const finish = () => {
        clearInterval(poll);
        clearTimeout(deadline);
        this.#shutdown();
        resolve();
      };
      const poll = setInterval(() => {
        if (this.#outbox.delivered(byeSeq)) finish();
      }, POLL_MS);
      const deadline = setTimeout(finish, SHUTDOWN_WAIT_MS);
    });
    return this.#closing;
  }

  /**
   * A text frame from the daemon: every type the protocol knows is handled, the transport's own here and the
   * commands by `DaemonCommands`, for the factory run attached (or answered at once when none is).
   */
  onFrame(text: unknown): void {
    let f: DaemonFrame;
    try {
      f = JSON.parse(typeof text === "string" ? text : String(text));
    } catch {
      return this.#log("daemon sent a frame that is not JSON");
    }
    if (typeof f !== "object" || f === null) return;
    const run = this.binding;
    switch (f.type) {
      case "welcome":
        this.policy = askSet(f.policy?.ask);
        this.features = new Set(Array.isArray(f.features) ? f.features : []);
        // A welcome without one (an older daemon, or none set) means no budget.
        this.budget.update(f.budget ?? null);
        this.#policyKnown();
        this.#onWelcome(Number(f.lastSeq) || 0);
        return run?.budgetChanged?.();
      case "policy":
        this.policy = askSet(f.ask);
        this.budget.update(f.budget);
        return run?.budgetChanged?.();
      case "ack":
        return this.#outbox.ack(Number(f.lastSeq) || 0);
      case "pong":
        return;
      case "error":
        return this.#socket.daemonError(f);
      default:
        return this.#commands.dispatch(f, run);
    }
  }

  /**
   * The attached run ended: a prompt it took and never answered may run again when repeated. The run refuses
   * every prompt it still queued (which forgets it), so this only guards against one left without an answer.
   */
  forgetQueuedPrompts(): void {
    this.#commands.forgetQueuedPrompts();
  }

  /** Answer a daemon command that carried a `commandId` (older daemons send none: then nothing). */
  commandResult(f: Answerable, error?: string): void {
    this.#commands.commandResult(f, error);
  }

  /** The `hello` a socket sends as it opens: the session, and what the attached run still waits for. */
  #hello(): HelloFrameInput {
    return {
      v: PROTOCOL_VERSION,
      type: "hello",
      sessionId: this.sessionId,
      seq: 0,
      ts: Date.now(),
      session: this.info,
      features: [Feature.promptOnce],
      // Without a run attached the plugin cannot say what waits, so it says nothing (the daemon keeps all).
      ...(this.binding?.waiting ? { waiting: this.binding.waiting().slice(0, FieldMax.waiting) } : {}),
    };
  }

  #onWelcome(lastSeq: number) {
    this.#outbox.welcome(lastSeq);
    this.#socket.welcomed();
    const o = this.#outbox.takeOverflow();
    if (o) {
      this.#log(
        `session ${this.sessionId}: buffer overflow, ${o.dropped} events dropped`,
      );
      this.emit("buffer_overflow", { ...o });
    }
    this.binding?.welcomed?.();
    this.#outbox.queueFlush();
  }

  #shutdown() {
    this.#outbox.writeSync();
    this.#socket.shutdown();
    this.#outbox.clear();
  }
}
