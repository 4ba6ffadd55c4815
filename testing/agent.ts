/**
 * The plugin's and the browser's side of the sockets, scripted: the frames a plugin sends (`helloFrame`,
 * `eventFrame`, at the protocol's version), `connectAgent` (Deno's WebSocket; resolves after `welcome`) for
 * tests, `nodelayAgent` (npm `ws`, as the real plugin) for the benches and the fault scenarios' processes,
 * and `connectBrowser` for `/ws`.
 */
import NodeWebSocket from "ws";
import { PROTOCOL_VERSION } from "../lib/wire.ts";
import { waitFor } from "./daemon.ts";

export interface AgentTarget {
  agentUrl: string;
  token: string;
}

export interface AgentOptions {
  sessionId?: string;
  session?: Record<string, unknown>;
  /** Seq of the next event; defaults to welcome.lastSeq + 1. */
  nextSeq?: number;
  /** More fields of the hello frame (e.g. `waiting`). */
  hello?: Record<string, unknown>;
}

export type Frame = Record<string, unknown> & { type: string };

export interface AgentClient {
  sessionId: string;
  socket: WebSocket;
  welcome: Frame;
  /** Daemon→plugin frames received so far (welcome, ack, prompt, abort, error). */
  frames: Frame[];
  /** Send one event with the next seq; returns that seq. */
  send(type: string, payload?: Record<string, unknown>): number;
  /** Send raw text (for malformed-frame tests). */
  sendRaw(text: string): void;
  /** Wait for a frame matching `pred`. */
  waitFrame(pred: (f: Frame) => boolean, what?: string, timeoutMs?: number): Promise<Frame>;
  /** Resolves with the close code once the socket is closed. */
  closed: Promise<CloseEvent>;
  close(): Promise<void>;
}

/** The snapshot a plugin sends in hello, with test defaults. */
export function sessionInfo(id: string, extra: Record<string, unknown> = {}) {
  return {
    id,
    name: `session ${id}`,
    cwd: "/home/dev/project",
    model: "fake-model",
    provider: "fake",
    agent: false,
    repo: null,
    startedAt: 1_700_000_000_000,
    ...extra,
  };
}

/** The `hello` frame a plugin opens its socket with; `more` adds fields (e.g. `waiting`). */
export function helloFrame(
  sessionId: string,
  session: Record<string, unknown> = sessionInfo(sessionId),
  more: Record<string, unknown> = {},
) {
  return { v: PROTOCOL_VERSION, type: "hello", sessionId, seq: 0, ts: Date.now(), session, ...more };
}

/** One event frame of `type` at `seq` (`payload`: its other fields). */
export function eventFrame(
  sessionId: string,
  seq: number,
  type: string,
  payload: Record<string, unknown> = {},
  ts = Date.now(),
) {
  return { v: PROTOCOL_VERSION, sessionId, seq, ts, type, ...payload };
}

/** A `message_end` payload for a user message. */
export function userEnd(id: string, text: string) {
  return { message: { role: "user", id, text, thinking: null, toolCalls: [], toolCallId: null } };
}

/** Open a plugin socket, send hello and wait for welcome. */
export async function connectAgent(target: AgentTarget, options: AgentOptions = {}): Promise<AgentClient> {
  const sessionId = options.sessionId ?? `s-${crypto.randomUUID()}`;
  const socket = new WebSocket(target.agentUrl, {
    headers: { authorization: `Bearer ${target.token}` },
  } as unknown as string[]);
  const frames: Frame[] = [];
  // Listen before open: the welcome may arrive in the same read as the upgrade.
  socket.onmessage = (e) => frames.push(JSON.parse(e.data));
  const closed = new Promise<CloseEvent>((resolve) => socket.addEventListener("close", (e) => resolve(e)));
  await new Promise<void>((resolve, reject) => {
    socket.onopen = () => resolve();
    socket.onerror = () => reject(new Error(`cannot connect to ${target.agentUrl}`));
  });
  socket.send(JSON.stringify(helloFrame(sessionId, options.session, options.hello)));
  const waitFrame = async (pred: (f: Frame) => boolean, what = "a frame", timeoutMs = 10_000) =>
    await waitFor(() => frames.find(pred), what, timeoutMs);
  const welcome = await waitFrame((f) => f.type === "welcome", "welcome");
  let seq = options.nextSeq ?? (welcome.lastSeq as number) + 1;
  return {
    sessionId,
    socket,
    welcome,
    frames,
    send(type, payload = {}) {
      const s = seq++;
      socket.send(JSON.stringify(eventFrame(sessionId, s, type, payload)));
      return s;
    },
    sendRaw: (text) => socket.send(text),
    waitFrame,
    closed,
    async close() {
      if (socket.readyState !== WebSocket.CLOSED) {
        socket.close();
        await closed;
      }
    },
  };
}

/** A session as `GET /api/sessions` and the browser socket describe it (the fields tests look at). */
export type SessionSummary = Record<string, unknown> & { id: string; online: boolean };

/**
 * Fold one daemon→browser frame into the browser's view of the sessions: `session_list` replaces it,
 * `session_update` sets the changed summaries and drops the removed ids. Other frames leave it as it is.
 */
export function applySessionFrame(sessions: Map<string, SessionSummary>, frame: Frame): void {
  if (frame.type === "session_list") {
    sessions.clear();
    for (const s of frame.sessions as SessionSummary[]) sessions.set(s.id, s);
  } else if (frame.type === "session_update") {
    for (const s of (frame.sessions ?? []) as SessionSummary[]) sessions.set(s.id, s);
    for (const id of (frame.removed ?? []) as string[]) sessions.delete(id);
  }
}

/**
 * A browser-side socket on `/ws` that records every frame and keeps the session map the frames describe,
 * so tests wait on "session X is online" whether the daemon re-sends the list or sends only the changes.
 */
export async function connectBrowser(url: string) {
  const socket = new WebSocket(url);
  const frames: Frame[] = [];
  const sessions = new Map<string, SessionSummary>();
  socket.onmessage = (e) => {
    const frame = JSON.parse(e.data) as Frame;
    frames.push(frame);
    applySessionFrame(sessions, frame);
  };
  const closed = new Promise<CloseEvent>((resolve) => socket.addEventListener("close", (e) => resolve(e)));
  await new Promise<void>((resolve, reject) => {
    socket.onopen = () => resolve();
    socket.onerror = () => reject(new Error(`cannot connect to ${url}`));
  });
  return {
    socket,
    frames,
    /** The sessions as this browser knows them now, by id. */
    sessions,
    closed,
    send: (frame: Record<string, unknown>) => socket.send(JSON.stringify(frame)),
    waitFrame: (pred: (f: Frame) => boolean, what = "a frame", timeoutMs = 10_000) =>
      waitFor(() => frames.find(pred), what, timeoutMs),
    /** Wait until the session map satisfies `pred` (after at least the first `session_list`). */
    waitSessions: (
      pred: (sessions: Map<string, SessionSummary>) => boolean,
      what = "a session list",
      timeoutMs = 10_000,
    ) => waitFor(() => frames.some((f) => f.type === "session_list") && pred(sessions), what, timeoutMs),
    async close() {
      if (socket.readyState !== WebSocket.CLOSED) {
        socket.close();
        await closed;
      }
    },
  };
}

export interface WsAgent {
  socket: NodeWebSocket;
  /** Send one event of `type` with the next seq. */
  send(type: string, payload: Record<string, unknown>): void;
  close(): Promise<unknown>;
}

/**
 * A plugin-side socket from npm `ws`, as the real plugin uses (TCP_NODELAY, so no delta waits for Nagle,
 * which Deno's own WebSocket client does not turn off): says hello, waits for the welcome, then sends events
 * with consecutive seqs. `headers` go on the upgrade request beside the token.
 */
export async function nodelayAgent(
  url: string,
  token: string,
  sessionId: string,
  name = "fan",
  headers: Record<string, string> = {},
): Promise<WsAgent> {
  const ws = new NodeWebSocket(url, { headers: { authorization: `Bearer ${token}`, ...headers } });
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  const welcomed = new Promise((resolve) => ws.once("message", resolve));
  ws.send(
    JSON.stringify(
      helloFrame(sessionId, sessionInfo(sessionId, { name, cwd: "/", model: "m", provider: "p" })),
    ),
  );
  await welcomed;
  let seq = 1;
  return {
    socket: ws,
    send: (type, payload) => ws.send(JSON.stringify(eventFrame(sessionId, seq++, type, payload))),
    close: () =>
      ws.readyState === NodeWebSocket.CLOSED
        ? Promise.resolve()
        : new Promise((resolve) => (ws.once("close", resolve), ws.close())),
  };
}
