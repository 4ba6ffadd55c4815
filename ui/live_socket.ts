/**
 * The browser's `/ws` connection: reconnects forever with capped exponential backoff and jitter, reports its
 * state so the page can show it, and calls `onOpen` on every (re)connect so callers re-subscribe and catch up.
 * It pings the daemon every 5 s (`{"type":"ping"}`, answered by `pong`) and treats 15 s without any frame as a
 * dead daemon (a paused or unplugged one never closes the socket): it drops the socket and reconnects.
 */
import type { BrowserFrame, ServerFrame } from "../lib/protocol.ts";

export type SocketState = "connecting" | "open" | "retrying" | "closed";

export interface SocketStatus {
  state: SocketState;
  /** Failed attempts since the last successful open. */
  attempt: number;
  /** When retrying: milliseconds until the next attempt. */
  retryInMs?: number;
}

export interface LiveSocketOptions {
  /** Where to connect; a function so a token signed in later is picked up on the next attempt. */
  url: string | (() => string);
  onFrame(frame: ServerFrame): void;
  /** Runs on every open, before any frame of that connection is delivered. */
  onOpen?(send: (frame: BrowserFrame) => void): void;
  onStatus?(status: SocketStatus): void;
  minDelayMs?: number;
  maxDelayMs?: number;
  /** How often to ping the daemon (default 5 s). */
  pingMs?: number;
  /** Silence after which the daemon counts as gone (default 15 s). */
  deadAfterMs?: number;
  random?: () => number;
  WebSocketImpl?: typeof WebSocket;
}

export interface LiveSocket {
  /** Send a frame now if open; frames sent while closed are dropped (`onOpen` re-sends what matters). */
  send(frame: BrowserFrame): boolean;
  /** Skip the wait and try again now (e.g. the browser came back online). */
  reconnectNow(): void;
  /** Close for good; no more reconnects. */
  close(): void;
}

/**
 * Delay before reconnect attempt `attempt` (1-based): doubling from `min`, capped at `max`, with ±25 % jitter so
 * many tabs do not return at once.
 */
export function backoffDelay(
  attempt: number,
  min = 500,
  max = 15_000,
  random: () => number = Math.random,
): number {
  const base = Math.min(max, min * 2 ** Math.max(0, attempt - 1));
  return Math.round(base * (0.75 + random() * 0.5));
}

/**
 * Open the socket and keep it open.
 * @param opts see `LiveSocketOptions`
 * @returns controls for the connection; never throws (failures become `retrying`)
 */
export function connectLive(opts: LiveSocketOptions): LiveSocket {
  const WS = opts.WebSocketImpl ?? WebSocket;
  let ws: WebSocket | null = null;
  let attempt = 0;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let closed = false;
  let lastHeard = 0;
  let heartbeat: ReturnType<typeof setInterval> | null = null;
  const pingMs = opts.pingMs ?? 5000;
  const deadAfterMs = opts.deadAfterMs ?? 15_000;

  function stopHeartbeat() {
    if (heartbeat) clearInterval(heartbeat);
    heartbeat = null;
  }

  function status(state: SocketState, retryInMs?: number) {
    opts.onStatus?.({ state, attempt, retryInMs });
  }

  function send(frame: BrowserFrame): boolean {
    if (!ws || ws.readyState !== WS.OPEN) return false;
    ws.send(JSON.stringify(frame));
    return true;
  }

  function open() {
    timer = null;
    if (closed) return;
    status("connecting");
    let socket: WebSocket;
    try {
      socket = new WS(typeof opts.url === "function" ? opts.url() : opts.url);
    } catch {
      return retry();
    }
    ws = socket;
    socket.onopen = () => {
      attempt = 0;
      lastHeard = Date.now();
      stopHeartbeat();
      heartbeat = setInterval(() => {
        if (ws !== socket) return stopHeartbeat();
        if (Date.now() - lastHeard > deadAfterMs) {
          // Silent for too long: the daemon is paused or gone without a close. Drop it and dial again.
          stopHeartbeat();
          ws = null;
          try {
            socket.close();
          } catch { /* already closing */ }
          return retry();
        }
        send({ type: "ping" });
      }, pingMs);
      status("open");
      opts.onOpen?.(send);
    };
    socket.onmessage = (e) => {
      lastHeard = Date.now();
      if (typeof e.data !== "string") return;
      let frame: ServerFrame;
      try {
        frame = JSON.parse(e.data);
      } catch {
        return;
      }
      opts.onFrame(frame);
    };
    socket.onclose = () => {
      if (ws !== socket) return;
      stopHeartbeat();
      ws = null;
      retry();
    };
    // An error is always followed by close; nothing to do here but keep it from being reported as unhandled.
    socket.onerror = () => {};
  }

  function retry() {
    if (closed) return;
    attempt++;
    const delay = backoffDelay(attempt, opts.minDelayMs, opts.maxDelayMs, opts.random);
    status("retrying", delay);
    timer = setTimeout(open, delay);
  }

  open();
  return {
    send,
    reconnectNow() {
      if (closed || (ws && ws.readyState <= WS.OPEN)) return;
      if (timer) clearTimeout(timer);
      open();
    },
    close() {
      closed = true;
      stopHeartbeat();
      if (timer) clearTimeout(timer);
      const s = ws;
      ws = null;
      s?.close(1000);
      status("closed");
    },
  };
}
