/**
 * One session's socket to the daemon, dialled again for ever: the dial with the token, `hello` once open, the
 * `welcome` that must follow within WELCOME_TIMEOUT_MS, the heartbeat that drops a silent daemon and the
 * backoff between dials. It knows no events: the link gives it the hello to send, takes every frame that
 * arrives and tells it when the welcome came. Apart from the link so that the connection's states
 * (down → connecting → open → ready, and closed for good) change in one place.
 */
import { CloseCode, HEARTBEAT_HEADER, MAX_PROMISED_PING_MS, PROTOCOL_VERSION } from "../../lib/wire.ts";
import { Backoff } from "./backoff.ts";
import type { Config } from "./config.ts";
import { WELCOME_TIMEOUT_MS } from "./constants.ts";
import type { FrameOf, HelloFrameInput, PingFrameInput } from "./frames.ts";
import { Heartbeat, heartbeatPingMs } from "./heartbeat.ts";
import type { Logger } from "./log.ts";
import { unref } from "./timers.ts";
import { webSocketClass, type WebSocketLike } from "./websocket.ts";

type State = "down" | "connecting" | "open" | "ready" | "closed";

/** One session's connection to the daemon; the link owns it. */
export class DaemonSocket {
  #cfg: Config;
  #sessionId: string;
  #log: Logger;
  #hello: () => HelloFrameInput;
  #onFrame: (text: unknown) => void;
  #ws: WebSocketLike | null = null;
  #state: State = "down";
  #backoff = new Backoff();
  #timer: ReturnType<typeof setTimeout> | null = null;
  #welcomeTimer: ReturnType<typeof setTimeout> | undefined;
  /** The link is closing: no new dial, and a socket that drops stays down. */
  #retired = false;
  #lastError = "";
  #heartbeat: Heartbeat | null = null;
  /** Daemon errors already logged on this socket: an older daemon answers every ping with the same one. */
  #errorsSeen = new Set<string>();

  /**
   * @param options.hello the `hello` to send as a socket opens (built then: it says what waits now)
   * @param options.onFrame called with every message the current socket receives
   */
  constructor(
    cfg: Config,
    sessionId: string,
    options: { log: Logger; hello: () => HelloFrameInput; onFrame: (text: unknown) => void },
  ) {
    this.#cfg = cfg;
    this.#sessionId = sessionId;
    this.#log = options.log;
    this.#hello = options.hello;
    this.#onFrame = options.onFrame;
  }

  /** The current socket, opening or open; null while down or closed. */
  get ws(): WebSocketLike | null {
    return this.#ws;
  }

  /** True once the daemon welcomed the current socket: events may be sent on it. */
  get ready(): boolean {
    return this.#state === "ready";
  }

  /** True once `shutdown()` ran. */
  get closed(): boolean {
    return this.#state === "closed";
  }

  /** Start connecting (idempotent). */
  start(): void {
    if (this.#state === "down" && !this.#timer && !this.#retired) {
      this.#connect();
    }
  }

  /** The link is closing: dial no more, and let a socket that drops stay down. */
  retire(): void {
    this.#retired = true;
  }

  /** The daemon welcomed the current socket: it is ready, and the next failure backs off from the start. */
  welcomed(): void {
    clearTimeout(this.#welcomeTimer);
    this.#backoff.reset();
    this.#lastError = "";
    this.#state = "ready";
  }

  /** Close for good: no timer is left, and the socket (if any) is closed with `bye`. */
  shutdown(): void {
    this.#state = "closed";
    this.#heartbeat?.stop();
    this.#heartbeat = null;
    if (this.#timer) clearTimeout(this.#timer);
    clearTimeout(this.#welcomeTimer);
    const ws = this.#ws;
    this.#ws = null;
    try {
      ws?.close(CloseCode.normal, "bye");
    } catch { /* ignore */ }
  }

  /** Log a problem of this session's connection, unless it is the one logged last. */
  noteError(msg: string): void {
    // A daemon that stays down would otherwise fill the log with one line per retry.
    if (msg !== this.#lastError) this.#log(`session ${this.#sessionId}: ${msg}`);
    this.#lastError = msg;
  }

  /** The daemon answered with an `error` frame: logged once per socket. */
  daemonError(f: FrameOf<"error">): void {
    const key = `${f.code}: ${f.message}`;
    if (this.#errorsSeen.size < 100 && !this.#errorsSeen.has(key)) {
      this.#errorsSeen.add(key);
      this.#log(`session ${this.#sessionId}: daemon error ${key}`);
    }
  }

  #connect() {
    this.#timer = null;
    if (this.#retired || this.#state === "closed") return;
    this.#state = "connecting";
    webSocketClass().then((WebSocket) => {
      if (this.#retired) return this.#down(CloseCode.normal);
      const headers: Record<string, string> = { authorization: `Bearer ${this.#cfg.token}` };
      // Promise the daemon our pings, so it checks this socket by its frames instead of pinging it.
      const pingMs = heartbeatPingMs(this.#cfg.heartbeat);
      if (pingMs <= MAX_PROMISED_PING_MS) headers[HEARTBEAT_HEADER] = String(pingMs);
      const ws = new WebSocket(this.#cfg.url, { headers });
      this.#ws = ws;
      ws.onopen = () => {
        if (this.#ws !== ws) return;
        this.#state = "open";
        this.#errorsSeen.clear();
        this.#heartbeat?.stop();
        this.#heartbeat = new Heartbeat(() => this.#ping(ws), () => this.#dead(ws), this.#cfg.heartbeat);
        this.#heartbeat.start();
        ws.send(JSON.stringify(this.#hello()));
        this.#welcomeTimer = unref(
          setTimeout(() => ws.close(CloseCode.normal), WELCOME_TIMEOUT_MS),
        );
      };
      ws.onmessage = (e) => {
        if (this.#ws !== ws) return;
        this.#heartbeat?.heard();
        this.#onFrame(e.data);
      };
      ws.onerror = (e) => {
        const err = e as
          | { message?: string; error?: { message?: string } }
          | undefined;
        this.noteError(
          `socket error: ${err?.message ?? err?.error?.message ?? "connection failed"}`,
        );
      };
      ws.onclose = (e) => {
        if (this.#ws !== ws) return;
        this.#ws = null;
        this.#down(e?.code ?? 1006);
      };
    }).catch((err) => {
      this.noteError(`cannot open socket: ${err?.message ?? err}`);
      this.#down(1006);
    });
  }

  #ping(ws: WebSocketLike) {
    const ts = Date.now(), sessionId = this.#sessionId;
    const ping: PingFrameInput = { v: PROTOCOL_VERSION, type: "ping", sessionId, seq: 0, ts };
    ws.send(JSON.stringify(ping));
  }

  /** The daemon went silent: drop this socket without waiting for a close handshake it cannot answer. */
  #dead(ws: WebSocketLike) {
    if (this.#ws !== ws) return;
    this.noteError("daemon silent: reconnecting");
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
    if (this.#retired) return;
    if (code === CloseCode.replaced) {
      this.#log(`session ${this.#sessionId}: replaced by a newer connection`);
    }
    this.#timer = unref(
      setTimeout(() => this.#connect(), this.#backoff.next(code)),
    );
  }
}
