import assert from "node:assert/strict";
import type { ServerFrame } from "../lib/protocol.ts";
import { createPageLive, type EventsFrame } from "./live.ts";

/** A real WebSocket server on loopback playing the daemon's `/ws`: records what browsers send. */
function serve(onOpen: (send: (f: ServerFrame) => void) => void) {
  const sockets = new Set<WebSocket>();
  const received: Record<string, unknown>[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    const { socket, response } = Deno.upgradeWebSocket(req);
    socket.onopen = () => {
      sockets.add(socket);
      onOpen((f) => socket.send(JSON.stringify(f)));
    };
    socket.onmessage = (e) => received.push(JSON.parse(String(e.data)));
    socket.onclose = () => sockets.delete(socket);
    return response;
  });
  return {
    url: `ws://127.0.0.1:${(server.addr as Deno.NetAddr).port}/ws`,
    received,
    send: (f: ServerFrame) => sockets.forEach((s) => s.send(JSON.stringify(f))),
    drop: () => sockets.forEach((s) => s.close(1001)),
    stop: async () => (sockets.forEach((s) => s.close(1001)), await server.shutdown()),
  };
}

async function until(check: () => boolean, what: string, ms = 5000) {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const row = (id: string) => ({
  id,
  name: null,
  cwd: "",
  model: null,
  provider: null,
  agent: false,
  repo: null,
  startedAt: 1,
  online: true,
  state: "idle" as const,
  lastSeq: 0,
  lastEventAt: null,
  ask: [],
  waiting: 0,
  title: id,
  activity: { state: "idle" as const },
  cost: 0,
  lastActivityAt: null,
});

Deno.test("createPageLive(): one socket feeds the directory, approvals and followers, re-subscribing after a drop", async () => {
  const srv = serve((send) => {
    send({ type: "session_list", sessions: [row("a")] });
    send({ type: "approvals", pending: [] });
  });
  const live = createPageLive({
    url: srv.url,
    minDelayMs: 20,
    credentialsAccepted: () => Promise.resolve(true),
  });
  try {
    let held = 0;
    const got: EventsFrame[] = [];
    const stop = live.follow("a", { after: () => held, onEvents: (f) => got.push(f) });
    await until(() => live.sessions.get().loaded && live.approvals.get() !== null, "first frames");
    // The server's first frames can reach the page before the page's subscribe reaches the server.
    await until(() => srv.received.length >= 1, "the subscribe");
    assert.deepEqual(srv.received, [{ type: "subscribe", sessionId: "a", after: 0 }]);

    srv.send({ type: "session_update", sessions: [row("b")], removed: ["a"] });
    await until(() => live.sessions.get().byId.has("b"), "the delta");
    assert.equal(live.sessions.get().byId.has("a"), false);

    srv.send({
      type: "events",
      sessionId: "a",
      after: 0,
      events: [{ sessionId: "a", seq: 1, ts: 1, type: "agent_start" }],
    });
    srv.send({ type: "events", sessionId: "other", after: 0, events: [] });
    await until(() => got.length === 1, "the followed session's events");
    held = 1;

    // After a drop the connection comes back by itself and catches up from what the follower holds.
    srv.drop();
    await until(() => srv.received.length === 2, "the re-subscribe");
    assert.deepEqual(srv.received[1], { type: "subscribe", sessionId: "a", after: 1 });

    live.requestList();
    stop();
    await until(() => srv.received.length === 4, "list and unsubscribe");
    assert.deepEqual(srv.received.slice(2), [{ type: "list" }, { type: "unsubscribe", sessionId: "a" }]);
    assert.equal(got.length, 1, "frames of other sessions are not delivered");
  } finally {
    live.close();
    await srv.stop();
  }
});

Deno.test("createPageLive(): refused from the second attempt on and REST says 401: the page asks to sign in", async () => {
  // A port nobody listens on: every attempt fails.
  const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (probe.addr as Deno.NetAddr).port;
  probe.close();
  let asked = 0;
  const live = createPageLive({
    url: `ws://127.0.0.1:${port}/ws`,
    minDelayMs: 10,
    credentialsAccepted: () => (asked++, Promise.resolve(false)),
  });
  try {
    await until(() => live.needSignIn.get(), "the sign-in prompt");
    assert.ok(asked >= 1);
  } finally {
    live.close();
  }
});

Deno.test("createPageLive(): a delta before any list asks for the whole list", async () => {
  const srv = serve((send) => send({ type: "session_update", sessions: [row("x")], removed: [] }));
  const live = createPageLive({ url: srv.url, credentialsAccepted: () => Promise.resolve(true) });
  try {
    await until(() => srv.received.length === 1, "the list request");
    assert.deepEqual(srv.received, [{ type: "list" }]);
    assert.equal(live.sessions.get().byId.has("x"), true);
  } finally {
    live.close();
    await srv.stop();
  }
});
