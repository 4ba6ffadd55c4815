/**
 * testing/balancer.ts against real HTTP servers on loopback: round robin, failover to a live backend when one
 * stops, a WebSocket and an SSE stream through it, and close() ending every pair (Deno's sanitizers check
 * that no connection, listener or pending read is left behind).
 */
import assert from "node:assert/strict";
import { startBalancer } from "../testing/balancer.ts";
import { waitFor } from "../testing/daemon.ts";

interface Backend {
  name: string;
  port: number;
  server: Deno.HttpServer<Deno.NetAddr>;
}

function backend(name: string): Backend {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (request) => {
    const path = new URL(request.url).pathname;
    if (path === "/ws") {
      const { socket, response } = Deno.upgradeWebSocket(request);
      socket.onopen = () => socket.send(`hello from ${name}`);
      socket.onmessage = (event) => socket.send(`${name}:${event.data}`);
      return response;
    }
    if (path === "/events") {
      // An SSE stream that never ends by itself: only the connection going away stops it.
      let timer: ReturnType<typeof setInterval> | undefined;
      let n = 0;
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          const tick = () => controller.enqueue(new TextEncoder().encode(`data: ${name} ${n++}\n\n`));
          tick();
          timer = setInterval(tick, 50);
        },
        cancel() {
          clearInterval(timer);
        },
      });
      return new Response(body, { headers: { "content-type": "text/event-stream" } });
    }
    return new Response(name);
  });
  return { name, port: server.addr.port, server };
}

/** A fetch that opens a new connection for every request, so each one is balanced on its own. */
async function names(url: string, count: number): Promise<string[]> {
  const client = Deno.createHttpClient({ poolMaxIdlePerHost: 0 });
  try {
    const out = [];
    for (let i = 0; i < count; i++) out.push(await (await fetch(url, { client })).text());
    return out;
  } finally {
    client.close();
  }
}

Deno.test("balancer: each new connection goes to the next backend", async () => {
  const a = backend("a");
  const b = backend("b");
  const balancer = await startBalancer([a.port, b.port]);
  try {
    assert.deepEqual(await names(balancer.url, 4), ["a", "b", "a", "b"]);
    balancer.setBackends([b.port]);
    assert.deepEqual(await names(balancer.url, 2), ["b", "b"]);
  } finally {
    await balancer.close();
    await Promise.all([a.server.shutdown(), b.server.shutdown()]);
  }
});

Deno.test("balancer: a backend that stopped is skipped, and one that is back gets its turn again", async () => {
  const a = backend("a");
  const b = backend("b");
  const balancer = await startBalancer([a.port, b.port]);
  try {
    await a.server.shutdown();
    assert.deepEqual(await names(balancer.url, 4), ["b", "b", "b", "b"]);
    const again = Deno.serve(
      { hostname: "127.0.0.1", port: a.port, onListen: () => {} },
      () => new Response("a2"),
    );
    try {
      assert.deepEqual((await names(balancer.url, 4)).sort(), ["a2", "a2", "b", "b"]);
    } finally {
      await again.shutdown();
    }
    await b.server.shutdown();
    // Nothing listens anywhere: the client's connection is closed without an answer.
    await assert.rejects(names(balancer.url, 1));
  } finally {
    await balancer.close();
  }
});

Deno.test("balancer: a WebSocket passes through both ways and its pair ends with it", async () => {
  const a = backend("a");
  const balancer = await startBalancer([a.port]);
  try {
    const socket = new WebSocket(`ws://127.0.0.1:${balancer.port}/ws`);
    const received: string[] = [];
    socket.onmessage = (event) => received.push(String(event.data));
    await new Promise((resolve, reject) => {
      socket.onopen = resolve;
      socket.onerror = reject;
    });
    await waitFor(() => received.length === 1, "the server's first message");
    socket.send("ping");
    socket.send("x".repeat(200_000));
    await waitFor(() => received.length === 3, "two echoes");
    assert.deepEqual(received.slice(0, 2), ["hello from a", "a:ping"]);
    assert.equal(received[2], `a:${"x".repeat(200_000)}`);
    assert.deepEqual(balancer.connections(), { [a.port]: 1 });
    const closed = new Promise((resolve) => socket.onclose = resolve);
    socket.close();
    await closed;
    await waitFor(() => Object.keys(balancer.connections()).length === 0, "the pair to close");
  } finally {
    await balancer.close();
    await a.server.shutdown();
  }
});

Deno.test("balancer: close() ends a live SSE stream's pair and stops listening", async () => {
  const a = backend("a");
  const balancer = await startBalancer([a.port]);
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: balancer.port });
  try {
    await conn.write(
      new TextEncoder().encode("GET /events HTTP/1.1\r\nhost: x\r\naccept: text/event-stream\r\n\r\n"),
    );
    const reader = conn.readable.getReader();
    let text = "";
    while (!text.includes("data: a 1")) {
      const { value, done } = await reader.read();
      assert.ok(!done, `stream ended early: ${text}`);
      text += new TextDecoder().decode(value);
    }
    assert.match(text, /^HTTP\/1\.1 200/);
    assert.deepEqual(balancer.connections(), { [a.port]: 1 });
    await balancer.close();
    assert.deepEqual(balancer.connections(), {});
    // The client sees its connection end (whatever was still in flight first).
    while (!(await reader.read().catch(() => ({ done: true }))).done) { /* drain */ }
    reader.releaseLock();
    await assert.rejects(Deno.connect({ hostname: "127.0.0.1", port: balancer.port }));
  } finally {
    try {
      conn.close();
    } catch { /* closed by a failed read */ }
    await balancer.close();
    await a.server.shutdown();
  }
});
