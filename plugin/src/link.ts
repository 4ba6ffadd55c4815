/**
 * One session's link to the daemon: its seq counter, its buffer and its socket. It outlives factory runs
 * (pi re-runs the factory on /new, /resume, /reload) and reconnects forever; emitting never does I/O (but
 * `emitNow`, for the one event whose arrival time the daemon shows).
 */
import { CloseCode, Feature, FieldMax, PROTOCOL_VERSION } from "../../lib/wire.ts";
import { Backoff } from "./backoff.ts";
import { EventBuffer, type EventFrame } from "./buffer.ts";
import type { Config } from "./config.ts";
import {
  BATCH_MAX_EVENTS,
  HIGH_WATER_BYTES,
  POLICY_WAIT_MS,
  POLL_MS,
  SEND_BATCH,
  SHUTDOWN_WAIT_MS,
  WELCOME_TIMEOUT_MS,
} from "./constants.ts";
import { encode, encodeBatch } from "./encode.ts";
import type {
  AgentEventType,
  AskSet,
  DaemonFrame,
  EventPayload,
  FrameOf,
  HelloFrameInput,
  PingFrameInput,
  SessionInfo,
} from "./frames.ts";
import { Heartbeat } from "./heartbeat.ts";
import { BudgetGuard } from "./budget.ts";
import { computeChanges } from "./changes.ts";
import type { Logger } from "./log.ts";
import { TakenPrompts } from "./prompt_once.ts";
import { SeqFile } from "./seq_file.ts";
import { later, unref } from "./timers.ts";
import { webSocketClass, type WebSocketLike } from "./websocket.ts";

/** What a link hands the daemon's commands to: the factory run attached to it, which owns pi's session. */
export interface Binding {
  /** A prompt for pi, seen for the first time (repeats of a kept prompt never reach here). */
  prompt(f: FrameOf<"prompt">): void;
  abort(f: FrameOf<"abort">): void;
  setModel(f: FrameOf<"set_model">): void;
  setName(f: FrameOf<"set_name">): void;
  /** A person answered one of this run's approval requests. */
  approvalDecision(f: FrameOf<"approval_decision">): void;
  /** A welcome came and the replay is queued: re-send what must be asked again. */
  welcomed?(): void;
  /** The approval ids this run still waits for, announced in `hello` so the daemon can drop the rest. */
  waiting?(): string[];
  /** The daemon sent the session's budget (`welcome`, `policy`): a run it stops is aborted at once. */
  budgetChanged?(): void;
}

/**
 * A frame that may be answered with `command_result`: any daemon frame, including a newer daemon's command
 * this plugin does not know (older daemons send no `commandId`, and are then not answered).
 */
export interface Answerable {
  type?: unknown;
  commandId?: unknown;
  promptId?: unknown;
}

/** Why a command found no factory run to take it. */
const NO_RUN = "no live pi session";

/** `ask` if it is an ask set, else none (an older daemon, or a malformed field). */
function askSet(ask: unknown): AskSet {
  if (ask === "all") return "all";
  return Array.isArray(ask) ? ask.filter((t): t is string => typeof t === "string") : [];
}

/** About how many characters an answer takes in the buffer. */
function byteSize(changes: object): number {
  return JSON.stringify(changes).length;
}

type State = "down" | "connecting" | "open" | "ready" | "closed";

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
  #cfg: Config;
  #log: Logger;
  #seq: SeqFile;
  #buf = new EventBuffer();
  #nextSeq: number;
  #baseSeq: number;
  #everWelcomed = false;
  #ws: WebSocketLike | null = null;
  #state: State = "down";
  #backoff = new Backoff();
  #timer: ReturnType<typeof setTimeout> | null = null;
  #welcomeTimer: ReturnType<typeof setTimeout> | undefined;
  #flushQueued = false;
  #closing: Promise<void> | null = null;
  #lastError = "";
  #heartbeat: Heartbeat | null = null;
  /** Daemon errors already logged on this socket: an older daemon answers every ping with the same one. */
  #errorsSeen = new Set<string>();
  /** promptIds already taken: the daemon may send a kept prompt again (feature `prompt_once`). */
  #prompts = new TakenPrompts();
  /**
   * The commandIds of aborts, model and name changes taken, kept the way promptIds are: a daemon replica that
   * takes a session over sends again what the old one may have written just before it died, and a repeated
   * abort would stop whatever runs by then.
   */
  #commands = new TakenPrompts();

  constructor(cfg: Config, sessionId: string, info: SessionInfo, log: Logger) {
    this.#cfg = cfg;
    this.#log = log;
    this.sessionId = sessionId;
    this.info = info;
    this.#seq = new SeqFile(
      cfg.stateDir,
      sessionId,
      () => this.#nextSeq - 1,
      (msg, err) => {
        if (err) this.#log(`session ${sessionId}: ${msg}`, err);
        else this.#noteError(msg);
      },
    );
    this.#nextSeq = this.#baseSeq = this.#seq.read() + 1;
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
    return this.#nextSeq;
  }

  /** True once `close()` finished: a new factory run makes a new link. */
  get closed(): boolean {
    return this.#state === "closed";
  }

  /**
   * Queue one event; returns its seq. Never does I/O itself.
   * @param size roughly how many characters the payload holds (for the buffer's memory bound)
   */
  emit<T extends AgentEventType>(type: T, payload: EventPayload<T>, size = 200): number {
    // Deltas are only useful live: the daemon never stores them, so offline ones are not kept (nor built).
    if (type === "message_update" && this.#state !== "ready") {
      this.#seq.dirty();
      return this.#nextSeq++;
    }
    return this.emitFrame(type, payload, size).seq;
  }

  /**
   * `emit`, sent at once on a ready socket instead of on the next `later` turn, with everything queued before
   * it (in seq order). For an event whose arrival time the daemon shows, emitted as pi is released: pi goes
   * on in the same turn (an approved tool starts), and the deferred flush waited behind that work, 6-15 ms.
   */
  emitNow<T extends AgentEventType>(type: T, payload: EventPayload<T>, size = 200): number {
    const seq = this.emit(type, payload, size);
    if (this.#state === "ready") this.#flush();
    return seq;
  }

  /** `emit`, returning the frame itself (to send it again later with the same seq). */
  emitFrame<T extends AgentEventType>(type: T, payload: EventPayload<T>, size = 200): EventFrame {
    const seq = this.#nextSeq++;
    this.#seq.dirty();
    const ev: EventFrame = {
      v: PROTOCOL_VERSION,
      sessionId: this.sessionId,
      seq,
      ts: Date.now(),
      type,
      ...payload,
    };
    this.#buf.push(ev, size, type === "buffer_overflow");
    if (this.#state === "ready") this.#queueFlush();
    return ev;
  }

  /**
   * Send `ev` again on the current socket, unless the buffer's replay sends it anyway. The daemon's log
   * ignores the seq it already has, but answers the frame itself (a stored approval decision).
   */
  resend(ev: EventFrame): void {
    const ws = this.#ws;
    if (this.#state !== "ready" || !ws || this.#buf.has(ev.seq)) return;
    try {
      ws.send(encode(ev));
    } catch (err) {
      this.#log(`session ${this.sessionId}: send failed`, err);
    }
  }

  /** Start connecting (idempotent). */
  start(): void {
    if (this.#state === "down" && !this.#timer && !this.#closing) {
      this.#connect();
    }
  }

  /** Send `bye`, wait (bounded) for the daemon to take everything, then close for good. */
  close(): Promise<void> {
    if (this.#closing) return this.#closing;
    const byeSeq = this.emit("bye", { reason: "shutdown" });
    this.#seq.writeSync();
    if (this.#ws === null) {
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
        const head = this.#buf.first;
        if (!head || head.seq > byeSeq) finish();
      }, POLL_MS);
      const deadline = setTimeout(finish, SHUTDOWN_WAIT_MS);
    });
    return this.#closing;
  }

  /**
   * A text frame from the daemon: every type the protocol knows is handled here, the transport's own on the
   * link and the commands by the factory run attached (or answered at once when none is).
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
        return this.#buf.trim(Number(f.lastSeq) || 0);
      case "pong":
        return;
      case "error":
        return this.#onError(f);
      case "prompt":
        if (!this.#firstTime(f)) return;
        if (run) return run.prompt(f);
        this.#log(`prompt ${f.promptId} dropped: ${NO_RUN}`);
        return this.commandResult(f, NO_RUN);
      case "abort":
        if (!this.#firstCommand(f)) return;
        return run ? run.abort(f) : this.commandResult(f, NO_RUN);
      case "set_model":
        if (!this.#firstCommand(f)) return;
        return run ? run.setModel(f) : this.commandResult(f, NO_RUN);
      case "set_name":
        if (!this.#firstCommand(f)) return;
        return run ? run.setName(f) : this.commandResult(f, NO_RUN);
      case "changes":
        // Needs no pi run: git reads the session's cwd, which the link knows.
        return this.#onChanges(f);
      case "approval_decision":
        // Nothing to answer without a run: the request is sent again, and decided again, after a restart.
        return run?.approvalDecision(f);
      default: {
        // Every type of the protocol is handled above (a new one fails the type check here); at run time a
        // newer daemon may still send a command this plugin does not know: it is refused, not left waiting.
        const unknown: never = f;
        const g = unknown as Answerable;
        return this.commandResult(g, run ? `unknown command ${JSON.stringify(String(g.type))}` : NO_RUN);
      }
    }
  }

  /**
   * The attached run ended: a prompt it took and never answered may run again when repeated. The run refuses
   * every prompt it still queued (which forgets it), so this only guards against one left without an answer.
   */
  forgetQueuedPrompts(): void {
    this.#prompts.forgetUnanswered();
  }

  /** A prompt seen before is not run again: answered again once the first was answered, else ignored. */
  #firstTime(f: FrameOf<"prompt">): boolean {
    const verdict = this.#prompts.take(f.promptId);
    if (verdict.run) return true;
    this.#log(`prompt ${f.promptId} came again: not run twice`);
    if (verdict.answered) this.commandResult(f);
    return false;
  }

  /** An abort, model or name change seen before is not run again: answered again once the first was. */
  #firstCommand(f: FrameOf<"abort" | "set_model" | "set_name">): boolean {
    const verdict = this.#commands.take(f.commandId);
    if (verdict.run) return true;
    this.#log(`${f.type} ${f.commandId} came again: not run twice`);
    if (verdict.answered) this.commandResult(f);
    return false;
  }

  /** Answer a daemon command that carried a `commandId` (older daemons send none: then nothing). */
  commandResult(f: Answerable, error?: string): void {
    if (f.type === "prompt") this.#prompts.answered(f.promptId, !error);
    else if (f.type === "abort" || f.type === "set_model" || f.type === "set_name") {
      this.#commands.answered(f.commandId, !error);
    }
    if (typeof f.commandId !== "string" || !f.commandId) return;
    const cut = error ? { error: error.slice(0, FieldMax.commandError) } : {};
    this.emit("command_result", { commandId: f.commandId, ok: !error, ...cut });
  }

  /** Answer `changes` with what changed in pi's cwd (or git's error), in one `command_result`. */
  #onChanges(f: FrameOf<"changes">): void {
    const scope = f.scope === "uncommitted" ? "uncommitted" : "all";
    const path = typeof f.path === "string" ? f.path : undefined;
    computeChanges(this.info.cwd, scope, path).then(
      (changes) => {
        if (typeof f.commandId !== "string" || !f.commandId) return;
        // The answer's budget keeps it within one frame: its size is known, the buffer counts it.
        this.emitNow(
          "command_result",
          { commandId: f.commandId, ok: true, changes },
          1000 + byteSize(changes),
        );
      },
      (err) => this.commandResult(f, `git: ${(err as Error)?.message ?? err}`),
    );
  }

  #onError(f: FrameOf<"error">) {
    const key = `${f.code}: ${f.message}`;
    if (this.#errorsSeen.size < 100 && !this.#errorsSeen.has(key)) {
      this.#errorsSeen.add(key);
      this.#log(`session ${this.sessionId}: daemon error ${key}`);
    }
  }

  #connect() {
    this.#timer = null;
    if (this.#closing || this.#state === "closed") return;
    this.#state = "connecting";
    webSocketClass().then((WebSocket) => {
      if (this.#closing) return this.#down(CloseCode.normal);
      const headers = { authorization: `Bearer ${this.#cfg.token}` };
      const ws = new WebSocket(this.#cfg.url, { headers });
      this.#ws = ws;
      ws.onopen = () => {
        if (this.#ws !== ws) return;
        this.#state = "open";
        this.#errorsSeen.clear();
        this.#heartbeat?.stop();
        this.#heartbeat = new Heartbeat(() => this.#ping(ws), () => this.#dead(ws), this.#cfg.heartbeat);
        this.#heartbeat.start();
        const hello: HelloFrameInput = {
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
        ws.send(JSON.stringify(hello));
        this.#welcomeTimer = unref(
          setTimeout(() => ws.close(CloseCode.normal), WELCOME_TIMEOUT_MS),
        );
      };
      ws.onmessage = (e) => {
        if (this.#ws !== ws) return;
        this.#heartbeat?.heard();
        this.onFrame(e.data);
      };
      ws.onerror = (e) => {
        const err = e as
          | { message?: string; error?: { message?: string } }
          | undefined;
        this.#noteError(
          `socket error: ${err?.message ?? err?.error?.message ?? "connection failed"}`,
        );
      };
      ws.onclose = (e) => {
        if (this.#ws !== ws) return;
        this.#ws = null;
        this.#down(e?.code ?? 1006);
      };
    }).catch((err) => {
      this.#noteError(`cannot open socket: ${err?.message ?? err}`);
      this.#down(1006);
    });
  }

  #ping(ws: WebSocketLike) {
    const ts = Date.now();
    const ping: PingFrameInput = { v: PROTOCOL_VERSION, type: "ping", sessionId: this.sessionId, seq: 0, ts };
    ws.send(JSON.stringify(ping));
  }

  /** The daemon went silent: drop this socket without waiting for a close handshake it cannot answer. */
  #dead(ws: WebSocketLike) {
    if (this.#ws !== ws) return;
    this.#noteError("daemon silent: reconnecting");
    this.#ws = null;
    try {
      const raw = ws as WebSocketLike & { terminate?: () => void };
      if (typeof raw.terminate === "function") raw.terminate();
      else ws.close(CloseCode.normal, "daemon silent");
    } catch { /* already gone */ }
    this.#down(1006);
  }

  #down(code: number) {
    clearTimeout(this.#welcomeTimer);
    this.#heartbeat?.stop();
    this.#heartbeat = null;
    if (this.#state === "closed") return;
    this.#state = "down";
    if (this.#closing) return;
    if (code === CloseCode.replaced) {
      this.#log(`session ${this.sessionId}: replaced by a newer connection`);
    }
    this.#timer = unref(
      setTimeout(() => this.#connect(), this.#backoff.next(code)),
    );
  }

  #noteError(msg: string) {
    // A daemon that stays down would otherwise fill the log with one line per retry.
    if (msg !== this.#lastError) this.#log(`session ${this.sessionId}: ${msg}`);
    this.#lastError = msg;
  }

  #onWelcome(lastSeq: number) {
    clearTimeout(this.#welcomeTimer);
    if (!this.#everWelcomed && lastSeq >= this.#baseSeq) {
      // The daemon holds seqs this process thought were free (the seq file lagged behind a crash).
      // Nothing was sent yet in this process, so renumber everything above the daemon's last one.
      const shift = lastSeq + 1 - this.#baseSeq;
      this.#buf.renumber(shift);
      this.#nextSeq += shift;
      this.#baseSeq += shift;
      this.#seq.dirty();
      this.#log(
        `session ${this.sessionId}: renumbered local events after daemon seq ${lastSeq}`,
      );
    } else if (lastSeq >= this.#nextSeq) {
      this.#nextSeq = lastSeq + 1;
      this.#seq.dirty();
    }
    this.#everWelcomed = true;
    this.#backoff.reset();
    this.#lastError = "";
    this.#buf.rewind(lastSeq);
    this.#state = "ready";
    const o = this.#buf.takeOverflow();
    if (o) {
      this.#log(
        `session ${this.sessionId}: buffer overflow, ${o.dropped} events dropped`,
      );
      this.emit("buffer_overflow", { ...o });
    }
    this.binding?.welcomed?.();
    this.#queueFlush();
  }

  #queueFlush() {
    if (this.#flushQueued) return;
    this.#flushQueued = true;
    later(() => this.#flush());
  }

  #flush() {
    this.#flushQueued = false;
    const ws = this.#ws;
    if (this.#state !== "ready" || !ws) return;
    // With the daemon's "batch" feature, queued events travel many to a frame (one ack for all of them).
    const batching = this.features.has(Feature.batch);
    try {
      for (let n = 0; this.#buf.unsent > 0; n++) {
        if (n >= SEND_BATCH) return this.#queueFlush();
        if (ws.bufferedAmount > HIGH_WATER_BYTES) {
          unref(setTimeout(() => this.#queueFlush(), 20));
          return;
        }
        if (batching && this.#buf.unsent > 1) {
          const { text, count } = encodeBatch(this.sessionId, (i) => this.#buf.unsentAt(i), BATCH_MAX_EVENTS);
          ws.send(text);
          this.#buf.markSent(count);
          // Bound the work of one turn by events, not frames, so a long replay still yields to pi.
          n += Math.floor(count / 2);
          continue;
        }
        ws.send(encode(this.#buf.peekUnsent()!));
        this.#buf.markSent();
      }
    } catch (err) {
      this.#log(`session ${this.sessionId}: send failed`, err);
      try {
        ws.close(CloseCode.internal);
      } catch { /* already closing */ }
    }
  }

  #shutdown() {
    this.#state = "closed";
    this.#heartbeat?.stop();
    this.#heartbeat = null;
    if (this.#timer) clearTimeout(this.#timer);
    clearTimeout(this.#welcomeTimer);
    this.#seq.writeSync();
    const ws = this.#ws;
    this.#ws = null;
    try {
      ws?.close(CloseCode.normal, "bye");
    } catch { /* ignore */ }
    this.#buf.clear();
  }
}
