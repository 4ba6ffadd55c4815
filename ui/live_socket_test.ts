import assert from "node:assert/strict";
import { backoffDelay, connectLive, type SocketStatus } from "./live_socket.ts";
import type { ServerFrame } from "../lib/protocol.ts";

Deno.test("backoffDelay() doubles, caps and jitters", () => {
  const mid = () => 0.5;
  assert.deepEqual([1, 2, 3, 4, 10].map((n) => backoffDelay(n, 100, 1000, mid)), [100, 200, 400, 800, 1000]);
  assert.equal(backoffDelay(1, 100, 1000, () => 0), 75);
  assert.equal(backoffDelay(1, 100, 1000, () => 0.9999), 125);
});

/** A real WebSocket server on loopback that says hello and echoes subscribe frames. */
function serve(port = 0) {
  const sockets = new Set<WebSocket>();
  const received: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port, onListen() {} }, (req) => {
    const { socket, response } = Deno.upgradeWebSocket(req);
    socket.onopen = () => {
      sockets.add(socket);
      socket.send(JSON.stringify({ type: "session_list", sessions: [] }));
    };
    socket.onmessage = (e) => received.push(String(e.data));
    socket.onclose = () => sockets.delete(socket);
    return response;
  });
  return {
    port: (server.addr as Deno.NetAddr).port,
    received,
    async stop() {
      for (const s of sockets) s.close(1001);
      await server.shutdown();
    },
  };
}

async function until(check: () => boolean, what: string, ms = 5000) {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

Deno.test("connectLive() reconnects after the server restarts and re-runs onOpen", async () => {
  let srv = serve();
  const port = srv.port;
  const frames: ServerFrame[] = [];
  const states: SocketStatus[] = [];
  let opens = 0;
  const live = connectLive({
    url: `ws://127.0.0.1:${port}/ws`,
    minDelayMs: 20,
    maxDelayMs: 100,
    onFrame: (f) => frames.push(f),
    onStatus: (s) => states.push(s),
    onOpen(send) {
      opens++;
      send({ type: "subscribe", sessionId: "s1", after: opens });
    },
  });
  try {
    await until(() => frames.length === 1 && srv.received.length === 1, "first connection");
    assert.deepEqual(JSON.parse(srv.received[0]), { type: "subscribe", sessionId: "s1", after: 1 });
    await srv.stop();
    await until(() => states.some((s) => s.state === "retrying"), "retrying state");
    srv = serve(port);
    await until(() => frames.length === 2 && srv.received.length === 1, "second connection");
    assert.deepEqual(JSON.parse(srv.received[0]), { type: "subscribe", sessionId: "s1", after: 2 });
    assert.equal(states.at(-1)?.state, "open");
    assert.equal(states.at(-1)?.attempt, 0);
  } finally {
    live.close();
    await srv.stop();
  }
  assert.equal(states.at(-1)?.state, "closed");
});

Deno.test("connectLive() keeps retrying with growing delays while nothing listens", async () => {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  const delays: number[] = [];
  const live = connectLive({
    url: `ws://127.0.0.1:${port}/ws`,
    minDelayMs: 5,
    maxDelayMs: 40,
    random: () => 0.5,
    onFrame() {},
    onStatus: (s) => s.state === "retrying" && delays.push(s.retryInMs!),
  });
  try {
    await until(() => delays.length >= 5, "five retries");
    assert.deepEqual(delays.slice(0, 5), [5, 10, 20, 40, 40]);
  } finally {
    live.close();
  }
});

Deno.test("connectLive() pings, and redials a daemon that went silent without closing", async () => {
  // A server that answers pings until told to play dead (as a SIGSTOPped daemon: the socket stays open).
  let silent = false;
  let connections = 0;
  const pings: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    const { socket, response } = Deno.upgradeWebSocket(req, { idleTimeout: 0 });
    socket.onopen = () => connections++;
    socket.onmessage = (e) => {
      if (JSON.parse(String(e.data)).type !== "ping") return;
      pings.push(String(e.data));
      if (!silent) socket.send(JSON.stringify({ type: "pong" }));
    };
    return response;
  });
  const states: string[] = [];
  const live = connectLive({
    url: `ws://127.0.0.1:${(server.addr as Deno.NetAddr).port}/ws`,
    minDelayMs: 20,
    maxDelayMs: 50,
    pingMs: 30,
    deadAfterMs: 200,
    onFrame() {},
    onStatus: (s) => states.push(s.state),
  });
  try {
    await until(() => pings.length >= 5, "pings answered");
    assert.equal(connections, 1, "a daemon that answers keeps the socket");
    silent = true;
    await until(() => connections >= 2, "a redial after the silence");
    assert.ok(states.includes("retrying"));
  } finally {
    live.close();
    await server.shutdown();
  }
});
