/**
 * One plugin connection on `/agent/ws`: the hello handshake, per-frame validation, and handing events to
 * the ingest path (approval events to the approvals owner too). A bad frame gets an error frame and is dropped;
 * the connection and every other session carry on.
 */
import type { App } from "./app.ts";
import {
  type AgentEvent,
  type AskSet,
  CloseCode,
  type DaemonFrame,
  type ErrorCode,
  Feature,
  MAX_FRAME_BYTES,
  parseAgentEvent,
  parsePluginFrame,
  type PluginFrame,
  PROTOCOL_VERSION,
} from "./protocol.ts";

import type { PluginLink } from "./sessions.ts";
import type { EventOrigin } from "./ingest.ts";
import type { Principal } from "./auth.ts";
import { throttle } from "./throttle.ts";
import { tooBig } from "./frame_precheck.ts";
import { errorBudget } from "./error_budget.ts";
import { FencedError } from "./storage/event_log.ts";
import { deltaTrace } from "./delta_trace.ts";
import { cutFrom, type Encoding } from "./event_codec.ts";
import { type Liveness, SILENCE_REASON } from "./liveness.ts";

type HelloFrame = Extract<PluginFrame, { type: "hello" }>;

/** At most one `ack` per socket in this interval. */
export const ACK_INTERVAL_MS = 50;

/**
 * With a shared database, how long a hello may wait for its claim and the copy's catch-up before the socket
 * is closed (1011) and the plugin tries again: a claim stuck behind a database that just came back could
 * otherwise land long after the plugin moved on, and take the session from the replica it moved to.
 */
export const SHARED_HELLO_DEADLINE_MS = 5_000;

/** Why a frame or an event was refused: the code and message of its `error` frame. */
type Refusal = [ErrorCode, string];

/**
 * Wire a freshly upgraded plugin socket to the daemon.
 * @param liveness when the plugin promised its heartbeat (Deno does not ping this socket): where it is watched.
 */
export function acceptAgentSocket(
  app: App,
  socket: WebSocket,
  principal: Principal | null,
  liveness: Liveness | null = null,
): void {
  // A session-scoped token may only ever speak for its own session.
  const onlySession = principal?.via === "agent" ? principal.sessionId : null;
  let sessionId: string | null = null;
  let closed = false;

  const send = (frame: DaemonFrame) => {
    if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(frame));
  };
  const errors = errorBudget();
  const close = (code: number, reason: string) => {
    if (closed) return;
    closed = true;
    try {
      socket.close(code, reason);
    } catch { /* already closing */ }
  };
  const sendError = (code: ErrorCode, message: string, seq?: number) =>
    send({ v: PROTOCOL_VERSION, type: "error", code, message, ...(seq === undefined ? {} : { seq }) });
  /** Answer a refused event of a batch, within the socket's budget of error frames; the socket carries on. */
  const reject = (code: ErrorCode, message: string, seq?: number) => {
    if (errors()) sendError(code, message, seq);
  };
  /**
   * Answer a refused frame. A plugin of any version sends only frames it built from the protocol, so one past
   * the budget (lib/error_budget.ts) comes from a broken or hostile peer: its socket is closed, and Deno then
   * drops what the peer still had in flight. Read to the end, a flood of small bad frames held the event loop
   * (every session's) up to 212 ms, for frames that each cost microseconds: Deno hands over every frame of
   * a 64 KB read before it reads another socket.
   */
  const refuse = (code: ErrorCode, message: string, seq?: number) => {
    if (errors()) sendError(code, message, seq);
    else close(CloseCode.policy, "too many refused frames");
  };

  // Acks only let the plugin trim its buffer: one per ACK_INTERVAL_MS is plenty, and under load that is far
  // fewer frames than one per committed batch. The last one always goes out.
  let acked = 0;
  const sendAck = throttle(() => {
    if (sessionId) {
      send({ v: PROTOCOL_VERSION, type: "ack", sessionId, seq: 0, ts: Date.now(), lastSeq: acked });
    }
  }, ACK_INTERVAL_MS);

  const link: PluginLink & EventOrigin = {
    send,
    close,
    ack(lastSeq) {
      acked = lastSeq;
      sendAck();
    },
    fail(error) {
      // The plugin must not think these events are stored: drop the socket so its replay after the next
      // welcome repairs the gap (on the replica that holds the session now, when another claimed it).
      if (error instanceof FencedError) {
        close(CloseCode.replaced, "the session was claimed by another replica");
      } else close(CloseCode.internal, "store write failed");
    },
  };

  const goOffline = () => {
    if (sessionId) app.sessions.disconnect(sessionId, link);
  };

  /**
   * One event after hello (alone or out of a batch): checked, then stored; or why it was not.
   * @param cut its encoding cut from the frame, when the frame allows (lib/event_codec.ts `cutFrom`).
   */
  const accept = (event: AgentEvent, cut?: Encoding): Refusal | null => {
    if (event.sessionId !== sessionId) {
      return ["wrong_session", `this socket belongs to session "${sessionId}"`];
    }
    if (event.seq === 0) return ["bad_frame", "events need a seq of 1 or more"];
    if (event.type === "approval_request") app.approvals.requested(event);
    else if (event.type === "approval_resolved") app.approvals.resolved(event);
    // A `changes` answer goes to the request waiting for it; the log stores the event without it.
    else if (event.type === "command_result") {
      const stored = app.changes.answered(event);
      if (stored !== event) cut = undefined; // no longer what the frame holds
      event = stored;
    }
    app.ingest.push(event, link, cut);
    if (event.type === "bye") {
      app.approvals.sessionEnded(event.sessionId);
      goOffline();
    }
    return null;
  };

  /**
   * With a shared database a hello waits for the claim and the copy's catch-up: frames that come meanwhile are
   * held here and handled after the welcome, in order.
   */
  let held: MessageEvent[] | null = null;
  /** Aborted when the socket closes while its shared hello is under way. */
  let helloGone: AbortController | null = null;
  socket.onmessage = (e: MessageEvent) => {
    beat?.heard();
    if (held) return void held.push(e);
    const span = deltaTrace && typeof e.data === "string" ? deltaTrace.arrived(e.data) : null;
    try {
      if (deltaTrace) deltaTrace.task("plugin frame", () => onFrame(e));
      else onFrame(e);
      if (span) deltaTrace!.handled(span);
    } catch (error) {
      // A write that SQLite refused (disk full, database locked past the busy timeout) on hello or an approval:
      // nothing of this frame is acked, so close the socket and let the plugin's replay repair it later. A
      // throw out of this handler would end the whole daemon.
      console.error(
        `lvmh: session ${sessionId ?? "(before hello)"}: ${(error as Error).message}; socket closed`,
      );
      close(CloseCode.internal, "store write failed");
    }
  };
  const onFrame = (e: MessageEvent) => {
    if (closed) return;
    if (typeof e.data !== "string") return refuse("bad_frame", "frames must be JSON text");
    if (tooBig(e.data)) return close(CloseCode.tooBig, `frame larger than ${MAX_FRAME_BYTES} bytes`);
    const parsed = parsePluginFrame(e.data);
    if (!parsed.ok) return refuse(parsed.code, parsed.message);
    const frame = parsed.value;

    if (frame.type === "hello") {
      if (sessionId !== null && sessionId !== frame.sessionId) {
        return refuse("wrong_session", `this socket belongs to session "${sessionId}"`);
      }
      if (onlySession !== null && frame.sessionId !== onlySession) {
        refuse("wrong_session", `this token belongs to session "${onlySession}"`);
        return close(CloseCode.policy, "token is for another session");
      }
      if (frame.session.id !== frame.sessionId) {
        return refuse("bad_frame", "session.id must equal sessionId");
      }
      sessionId = frame.sessionId;
      if (app.replica) return helloShared(frame);
      welcome(frame, app.sessions.connect(frame.session, link));
      return;
    }
    if (frame.type === "ping") {
      return send({ v: PROTOCOL_VERSION, type: "pong", sessionId: frame.sessionId, seq: 0, ts: Date.now() });
    }
    if (sessionId === null) return refuse("hello_required", "send hello before any event", frame.seq);
    const at = parsed.eventsAt;
    if (frame.type !== "batch") {
      const refused = accept(frame, at && cutFrom(frame, e.data, at[0], at[1]));
      return refused && refuse(...refused, frame.seq);
    }
    if (frame.sessionId !== sessionId) {
      return refuse("wrong_session", `this socket belongs to session "${sessionId}"`);
    }
    // Each event of a batch is validated on its own, as if it came alone: one bad event costs only itself (a
    // plugin replays its batches after a reconnect, so refusing them would only bring them back).
    for (let i = 0; i < frame.events.length; i++) {
      const raw = frame.events[i];
      const event = parseAgentEvent(raw);
      // Taken as parsed (a hot shape), an event's encoding can be cut from the frame.
      const cut = at && event.ok && event.value === raw
        ? cutFrom(event.value, e.data, at[2 * i], at[2 * i + 1])
        : undefined;
      const refused: Refusal | null = event.ok
        ? accept(event.value, cut)
        : ["bad_frame", `batch: ${event.message}`];
      if (refused) reject(...refused, seqOf(raw));
      if (closed) return;
    }
  };

  const helloShared = (frame: HelloFrame) => {
    held = [];
    const gone = new AbortController();
    helloGone = gone;
    const deadline = setTimeout(
      () => gone.abort(new Error(`no claim within ${SHARED_HELLO_DEADLINE_MS} ms`)),
      SHARED_HELLO_DEADLINE_MS,
    );
    const notAfter = Date.now() + SHARED_HELLO_DEADLINE_MS;
    app.sessions.connectShared(frame.session, link, notAfter, gone.signal).finally(() =>
      clearTimeout(deadline)
    ).then(
      (connected) => {
        if (closed) return;
        // Online from the welcome on, in the same step as the features are recorded (a kept hook prompt
        // must never see the one without the other).
        welcome(frame, connected, () => app.sessions.welcomed(frame.sessionId));
        const waiting = held ?? [];
        held = null;
        for (const e of waiting) socket.onmessage!(e);
      },
      (error) => {
        console.error(`lvmh: session ${frame.sessionId}: hello not claimed: ${(error as Error).message}`);
        held = null;
        close(CloseCode.internal, "shared database unavailable");
      },
    );
  };

  /** Welcome the plugin with where its log stands and its policy; then what waited for its hello goes again. */
  const welcome = (
    frame: HelloFrame,
    { lastSeq, ask }: { lastSeq: number; ask: AskSet },
    welcomed: () => void = () => {},
  ) => {
    const sessionId = frame.sessionId;
    if (frame.waiting) app.approvals.helloWaiting(sessionId, frame.waiting);
    send({
      v: PROTOCOL_VERSION,
      type: "welcome",
      sessionId,
      seq: 0,
      ts: Date.now(),
      lastSeq,
      policy: { ask },
      budget: app.budgets.wire(sessionId),
      features: [Feature.batch],
    });
    welcomed();
    // What the plugin supports (`hello.features`); a kept hook prompt unanswered on an older socket goes again.
    app.hooks.pluginHello(sessionId, frame.features);
  };
  const unwatch = app.tokens.closeOnRevoke(principal, () => close(CloseCode.policy, "token revoked"));
  /** The socket is gone: when it closed, or earlier when its plugin fell silent. Runs again harmlessly. */
  const ended = () => {
    unwatch();
    beat?.stop();
    closed = true;
    helloGone?.abort(new Error("the plugin socket closed during its hello"));
    sendAck.cancel();
    try {
      goOffline();
    } catch (error) {
      // Flushing this session's queue before it is listed offline can fail like any write: it is reported there.
      console.error(`lvmh: session ${sessionId}: going offline: ${(error as Error).message}`);
    }
  };
  // A silent plugin is offline now: the close handshake it cannot answer would hold `onclose` (and the
  // session's row) until it wakes; when it does, `onclose` finds the session already detached.
  const beat = liveness?.watch(() => {
    close(CloseCode.goingAway, SILENCE_REASON);
    ended();
  });
  socket.onclose = ended;
  socket.onerror = () => {};
}

function seqOf(raw: unknown): number | undefined {
  const seq = (raw as { seq?: unknown } | null)?.seq;
  return typeof seq === "number" ? seq : undefined;
}
