import assert from "node:assert/strict";
import { startDaemon, waitFor } from "./_daemon.ts";
import { type AgentClient, connectAgent, userEnd } from "./_agent_client.ts";
import { openSse, type SseClient } from "./_sse.ts";
import { cookieValue } from "../lib/auth.ts";

/** Send `n` events, every third a live delta; returns the seqs that are persisted. */
function sendMix(agent: AgentClient, n: number, persisted: number[]): void {
  for (let i = 0; i < n; i++) {
    if (i % 3 === 2) agent.send("message_update", { delta: `d${i}` });
    else {persisted.push(
        agent.send("message_end", userEnd(`m${persisted.length}`, `text ${persisted.length}`)),
      );}
  }
}

/** The ids of the persisted events a client got, checking each one's data against its id. */
function idsOf(client: SseClient): number[] {
  return client.events.filter((e) => e.id !== null).map((e) => {
    const data = JSON.parse(e.data);
    assert.equal(String(data.seq), e.id, "id is the event's seq");
    assert.equal(data.type, e.event, "event is the event's type");
    return Number(e.id);
  });
}

Deno.test("session stream: resume from every Last-Event-ID position across a live seam", async () => {
  await using d = await startDaemon();
  const agent = await connectAgent(d, { sessionId: "seam" });
  const persisted: number[] = [];
  sendMix(agent, 45, persisted);
  await agent.waitFrame((f) => f.type === "ack" && f.lastSeq === persisted.at(-1), "first ack");
  const positions = [0, ...persisted];
  const url = `${d.url}/api/sessions/seam/stream`;

  // Open one stream per position while the plugin keeps streaming, so each crosses the SQLite→live seam.
  const clients: SseClient[] = [];
  for (const [i, pos] of positions.entries()) {
    clients.push(await openSse(url, d.token, { lastEventId: pos }));
    if (i % 4 === 0) sendMix(agent, 3, persisted);
  }
  const query = await openSse(`${url}?after=${persisted[5]}`, d.token);
  sendMix(agent, 30, persisted);
  const last = persisted.at(-1)!;
  await agent.waitFrame((f) => f.type === "ack" && f.lastSeq === last, "last ack");

  try {
    for (const [i, pos] of [...positions, persisted[5]].entries()) {
      const c = i < positions.length ? clients[i] : query;
      assert.equal(c.status, 200);
      assert.match(c.headers.get("content-type") ?? "", /^text\/event-stream/);
      await c.waitEvent((e) => e.id === String(last), `stream after ${pos} reaches ${last}`);
      const ids = idsOf(c);
      assert.deepEqual(ids, persisted.filter((s) => s > pos), `after ${pos}: no gap, no duplicate, in order`);
      for (const e of c.events.filter((e) => e.event === "message_update")) {
        assert.equal(e.id, null, "deltas carry no id");
        assert.ok(JSON.parse(e.data).seq > pos, "no delta from before the resume point");
      }
    }
    // The last one opened saw deltas live (they are sent while it is subscribed).
    assert.ok(query.events.some((e) => e.event === "message_update"), "live deltas are streamed");
  } finally {
    await Promise.all([...clients, query].map((c) => c.close()));
    await agent.close();
  }
});

Deno.test("session stream: without a resume point, the latest page only, then live", async () => {
  await using d = await startDaemon();
  const agent = await connectAgent(d, { sessionId: "page" });
  let last = 0;
  for (let i = 0; i < 1200; i++) last = agent.send("message_end", userEnd(`m${i}`, `t${i}`));
  await agent.waitFrame((f) => f.type === "ack" && f.lastSeq === last);
  const c = await openSse(`${d.url}/api/sessions/page/stream`, d.token);
  await c.waitEvent((e) => e.id === "1200", "the latest event");
  const next = agent.send("agent_start");
  await c.waitEvent((e) => e.id === String(next), "a live event");
  const ids = idsOf(c);
  assert.equal(ids[0], 201, "the latest 1000 events");
  assert.equal(ids.length, 1001);
  await c.close();
  await agent.close();
});

Deno.test("session stream: statuses and credentials", async (t) => {
  await using d = await startDaemon();
  const agent = await connectAgent(d, { sessionId: "auth" });
  agent.send("agent_start");
  await agent.waitFrame((f) => f.type === "ack");
  await t.step("404 for an unknown session", async () => {
    const res = await d.api("/api/sessions/nope/stream");
    assert.equal(res.status, 404);
    assert.match((await res.json()).error, /nope/);
  });
  await t.step("400 for a bad Last-Event-ID or after", async () => {
    for (const init of [{ headers: { "last-event-id": "x" } }, {}]) {
      const res = await d.api(`/api/sessions/auth/stream${"headers" in init ? "" : "?after=-2"}`, init);
      assert.equal(res.status, 400);
      assert.ok((await res.json()).error);
    }
  });
  await t.step("401 without credentials", async () => {
    const res = await fetch(`${d.url}/api/sessions/auth/stream`);
    assert.equal(res.status, 401);
    await res.body?.cancel();
  });
  await t.step("the page cookie works (a browser EventSource)", async () => {
    const c = await openSse(`${d.url}/api/sessions/auth/stream?after=0`, null, {
      headers: { cookie: `lvmh_auth=${await cookieValue(d.token)}` },
    });
    assert.equal(c.status, 200);
    await c.waitEvent((e) => e.event === "agent_start");
    await c.close();
  });
  await agent.close();
});

Deno.test("session stream: resumes after a daemon SIGKILL and restart with no gap or duplicate", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "lvmh-sse-restart-" });
  try {
    const d1 = await startDaemon({ dataDir });
    const a1 = await connectAgent(d1, { sessionId: "crash" });
    const persisted: number[] = [];
    sendMix(a1, 30, persisted);
    await a1.waitFrame((f) => f.type === "ack" && f.lastSeq === persisted.at(-1));
    const c1 = await openSse(`${d1.url}/api/sessions/crash/stream?after=0`, d1.token);
    await c1.waitEvent((e) => e.id === String(persisted.at(-1)));
    const seen = idsOf(c1);
    await d1.kill("SIGKILL");
    await c1.ended;
    await d1.stop();

    await using d2 = await startDaemon({ dataDir, port: d1.port });
    const a2 = await connectAgent(d2, { sessionId: "crash" });
    assert.equal(a2.welcome.lastSeq, persisted.at(-1));
    const c2 = await openSse(`${d2.url}/api/sessions/crash/stream?after=0`, d2.token, {
      lastEventId: seen.at(-1)!,
    });
    sendMix(a2, 30, persisted);
    await c2.waitEvent((e) => e.id === String(persisted.at(-1)), "events after the restart");
    assert.deepEqual([...seen, ...idsOf(c2)], persisted, "every persisted event exactly once");
    await c2.close();
    await a2.close();
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("session stream: a reader that stops reading is cut off; a reading one gets everything", async () => {
  await using d = await startDaemon();
  const agent = await connectAgent(d, { sessionId: "slow" });
  agent.send("agent_start");
  await agent.waitFrame((f) => f.type === "ack");
  // A raw socket that sends the request and then reads nothing: the kernel buffers fill, then the daemon's.
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: d.port });
  await conn.write(new TextEncoder().encode(
    `GET /api/sessions/slow/stream HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${d.token}\r\n\r\n`,
  ));
  const reader = await openSse(`${d.url}/api/sessions/slow/stream`, d.token);
  await reader.waitEvent((e) => e.event === "agent_start");

  const chunk = "z".repeat(60_000);
  const total = 800;
  let last = 0;
  // In rounds of ~2.4 MB, each read by the live client before the next: it never falls 8 MiB behind.
  for (let i = 0; i < total; i++) {
    last = agent.send("message_end", userEnd(`m${i}`, chunk));
    if (i % 40 === 39 || i === total - 1) {
      await reader.waitEvent((e) => e.id === String(last), `the reading client gets event ${last}`, 30_000);
    }
  }

  // Now drain the stalled socket: it must end (cut off) well short of the ~48 MB produced.
  let received = 0;
  const buf = new Uint8Array(1 << 16);
  const deadline = setTimeout(() => conn.close(), 30_000);
  try {
    while (true) {
      const n = await conn.read(buf);
      if (n === null) break;
      received += n;
    }
  } catch { /* reset by the daemon: also a cut-off */ }
  clearTimeout(deadline);
  try {
    conn.close();
  } catch { /* closed already */ }
  const produced = total * chunk.length;
  assert.ok(received < produced / 2, `stalled reader got ${received} of ${produced} bytes, then was cut off`);
  assert.ok(received > 0, "it was streaming before it stalled");
  const res = await d.api("/api/sessions/slow");
  assert.equal(res.status, 200, "the daemon is fine");
  await res.body?.cancel();
  await waitFor(() => reader.events.length > total, "reader complete");
  await reader.close();
  await agent.close();
});
