/**
 * testing/replicas.ts itself: two daemon processes on one real PostgreSQL database behind the balancer. Both
 * answer through it; a SIGKILLed one really dies, its browser socket is closed and every new connection
 * reaches the other; restarted on its port and data dir it answers again. (What the replicas do together is
 * tested by the replica tests; this only proves the harness they stand on.)
 */
import assert from "node:assert/strict";
import { startReplicas } from "../../testing/replicas.ts";
import { waitFor } from "../../testing/daemon.ts";
import { newDatabase, postgresTest } from "../../testing/storage_replicas.ts";

/** `replica` of GET /api/health for `count` requests, each on a new connection (so each is balanced). */
async function healthReplicas(url: string, count: number): Promise<string[]> {
  const client = Deno.createHttpClient({ poolMaxIdlePerHost: 0 });
  try {
    const out = [];
    for (let i = 0; i < count; i++) {
      const response = await fetch(`${url}/api/health`, { client });
      assert.equal(response.status, 200);
      const body = await response.json();
      assert.equal(body.ok, true);
      out.push(body.replica);
    }
    return out;
  } finally {
    client.close();
  }
}

async function openSocket(url: string): Promise<{ socket: WebSocket; closed: Promise<CloseEvent> }> {
  const socket = new WebSocket(url);
  const closed = new Promise<CloseEvent>((resolve) => socket.addEventListener("close", resolve));
  await new Promise((resolve, reject) => {
    socket.addEventListener("open", resolve);
    socket.addEventListener("error", () => reject(new Error(`socket to ${url} failed`)));
  });
  return { socket, closed };
}

postgresTest("replicas harness: two replicas behind the balancer, one SIGKILLed and restarted", async () => {
  const set = await startReplicas(2, { databaseUrl: await newDatabase() });
  const sockets: { socket: WebSocket; closed: Promise<CloseEvent> }[] = [];
  try {
    const [r0, r1] = set.replicas;
    assert.deepEqual([r0.id, r1.id], ["r0", "r1"]);
    assert.notEqual(r0.port, r1.port);
    assert.notEqual(r0.dataDir, r1.dataDir);
    for (const r of set.replicas) {
      assert.equal(r.daemon().token, set.token);
      assert.deepEqual(await healthReplicas(r.url, 1), [r.id]);
    }
    // Round robin, no stickiness: consecutive connections alternate.
    assert.deepEqual((await healthReplicas(set.balancerUrl, 4)).sort(), ["r0", "r0", "r1", "r1"]);

    // A browser socket through the balancer on each replica.
    sockets.push(await openSocket(set.browserUrl), await openSocket(set.browserUrl));
    assert.deepEqual(set.balancer.connections(), { [r0.port]: 1, [r1.port]: 1 });

    const pid = r0.daemon().pid;
    const status = await r0.kill("SIGKILL");
    assert.equal(status.signal, "SIGKILL");
    assert.equal(status.success, false);
    assert.equal(r0.running(), false);
    assert.throws(() => r0.daemon(), /not running/);
    // The process is gone (and reaped): a signal to its pid finds no such process.
    assert.throws(() => Deno.kill(pid, "SIGCONT"));
    // Its socket is closed through the balancer; the other one stays open.
    await waitFor(() => !set.balancer.connections()[r0.port], "r0's pair to close");
    const first = await Promise.race(sockets.map((s, i) => s.closed.then(() => i)));
    assert.equal(sockets[1 - first].socket.readyState, WebSocket.OPEN);
    assert.deepEqual(set.balancer.connections(), { [r1.port]: 1 });
    assert.deepEqual(await healthReplicas(set.balancerUrl, 6), ["r1", "r1", "r1", "r1", "r1", "r1"]);

    await r0.restart();
    assert.equal(r0.running(), true);
    assert.notEqual(r0.daemon().pid, pid);
    assert.equal(r0.daemon().dataDir, r0.dataDir);
    assert.equal(r0.daemon().port, r0.port);
    assert.deepEqual((await healthReplicas(set.balancerUrl, 4)).sort(), ["r0", "r0", "r1", "r1"]);
    // An authenticated route through the balancer, with the shared token.
    const me = await set.api("/api/me");
    assert.equal(me.status, 200);
    await me.body?.cancel();
  } finally {
    for (const { socket } of sockets) socket.close();
    await Promise.all(sockets.map((s) => s.closed));
    await set.close();
  }
  for (const r of set.replicas) {
    await assert.rejects(Deno.stat(r.dataDir), Deno.errors.NotFound);
  }
});
