/**
 * One browser connection on `/ws`: the session list on connect, subscriptions with race-free catch-up,
 * and a bounded backlog enforced by the hub.
 */
import { errorBudget } from "./error_budget.ts";
import type { App } from "./app.ts";
import { eventsFrame, type Subscriber } from "./hub.ts";
import { CloseCode, MAX_FRAME_BYTES, parseBrowserFrame, type ServerFrame } from "./protocol.ts";
import { tooBig } from "./frame_precheck.ts";
import { eventJson } from "./event_codec.ts";
import { actorName, type Principal } from "./auth.ts";

/** Catch-up sent on subscribe is at most this many events; older history comes over REST. */
export const CATCH_UP_MAX = 5000;
const CATCH_UP_PAGE = 1000;

/** Wire a freshly upgraded browser socket to the hub. */
export function acceptBrowserSocket(app: App, socket: WebSocket, principal: Principal | null): void {
  const sub: Subscriber = {
    send: (data) => socket.readyState === WebSocket.OPEN && socket.send(data),
    bufferedAmount: () => socket.bufferedAmount,
    close: (code, reason) => socket.close(code, reason),
    takesDeltasAhead: true,
  };
  const sendFrame = (frame: ServerFrame) => app.hub.sendTo(sub, JSON.stringify(frame));
  /** This socket in presence: its pages are shown under the token's name. */
  const conn = crypto.randomUUID();

  // A revoked token closes the sockets it opened, at once.
  const unwatch = app.tokens.closeOnRevoke(principal, () => socket.close(CloseCode.policy, "token revoked"));
  socket.onopen = () => {
    app.hub.join(sub);
    sendFrame({ type: "session_list", sessions: app.sessions.list() });
    sendFrame({ type: "spawn_status", jobs: app.spawner.jobs() });
    sendFrame(app.approvals.frame());
    for (const frame of app.presence.frames()) sendFrame(frame);
  };
  const errors = errorBudget();
  socket.onmessage = (e: MessageEvent) => {
    if (typeof e.data !== "string" || tooBig(e.data, MAX_FRAME_BYTES)) {
      return socket.close(CloseCode.tooBig, "frame too large or not text");
    }
    const parsed = parseBrowserFrame(e.data);
    if (!parsed.ok) {
      // As on plugin sockets (lib/agent_conn.ts): past the budget, the page is not ours or not well.
      if (errors()) return sendFrame({ type: "error", message: parsed.message });
      return socket.close(CloseCode.policy, "too many refused frames");
    }
    const frame = parsed.value;
    app.presence.seen(conn);
    if (frame.type === "watch") {
      if (frame.leave) return app.presence.leave(conn, frame.sessionId);
      // Only a session that exists has watchers: a page of one that is gone says nothing to anyone.
      if (!app.sessions.get(frame.sessionId)) return;
      return app.presence.watch(conn, actorName(principal), frame.sessionId, frame.typing);
    }
    if (frame.type === "unsubscribe") return app.hub.unsubscribe(sub, frame.sessionId);
    if (frame.type === "list") return sendFrame({ type: "session_list", sessions: app.sessions.list() });
    if (frame.type === "ping") return sendFrame({ type: "pong" });
    try {
      // Read the catch-up and subscribe in the same synchronous turn: no commit can slip in between.
      if (frame.after !== undefined) catchUp(app, sub, frame.sessionId, frame.after);
      app.hub.subscribe(sub, frame.sessionId);
    } catch (error) {
      sendFrame({ type: "error", message: (error as Error).message });
    }
  };
  socket.onclose = () => {
    unwatch();
    app.presence.leave(conn);
    app.hub.leave(sub);
  };
  socket.onerror = () => {};
}

function catchUp(app: App, sub: Subscriber, sessionId: string, after: number): void {
  let from = after;
  for (let sent = 0; sent < CATCH_UP_MAX; sent += CATCH_UP_PAGE) {
    const rows = app.store.eventRows(sessionId, { after: from, limit: CATCH_UP_PAGE });
    if (rows.length === 0) return;
    app.hub.sendTo(sub, eventsFrame(sessionId, from, rows.map(eventJson)));
    from = rows[rows.length - 1].seq;
    if (rows.length < CATCH_UP_PAGE) return;
  }
}
