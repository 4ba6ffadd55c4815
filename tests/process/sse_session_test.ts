import assert from "node:assert/strict";
import { startDaemon, waitFor } from "../../testing/daemon.ts";
import { type AgentClient, connectAgent, userEnd } from "../../testing/agent.ts";
import { drain, openSse, type SseClient, stalledReader } from "../../testing/sse.ts";
import { cookieValue } from "../../lib/auth.ts";
import { daemonPid, rssMiB } from "../../testing/proc.ts";

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
    // Each persisted event's data is the whole envelope, exactly as the REST history has it (caught up or live).
    const history = await (await d.api("/api/sessions/seam/events?after=0")).json();
    const sent = clients[0].events.filter((e) => e.id !== null).map((e) => JSON.parse(e.data));
    assert.deepEqual(sent, history);
    assert.deepEqual(Object.keys(sent[0]).slice(0, 5), ["v", "sessionId", "seq", "ts", "type"]);
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

/** Flood session `slow` with `total` events of `chunk`, in rounds the reading client takes before the next. */
async function flood(agent: AgentClient, reader: SseClient, total: number, chunk: string): Promise<void> {
  // In rounds of ~2.4 MB, each read by the live client before the next: it never falls 8 MiB behind.
  for (let i = 0; i < total; i++) {
    const last = agent.send("message_end", userEnd(`m${reader.events.length}-${i}`, chunk));
    if (i % 40 === 39 || i === total - 1) {
      await reader.waitEvent((e) => e.id === String(last), `the reading client gets event ${last}`, 30_000);
    }
  }
}

/** The daemon's peak RSS growth (MiB) while `fn` runs, sampled from outside every 20 ms. */
async function rssGrowth(pid: number, fn: () => Promise<void>): Promise<number> {
  const before = rssMiB(pid);
  let peak = before;
  const sampler = setInterval(() => peak = Math.max(peak, rssMiB(pid) || 0), 20);
  try {
    await fn();
  } finally {
    clearInterval(sampler);
  }
  return Math.max(peak, rssMiB(pid) || 0) - before;
}

Deno.test("session stream: a reader that stops reading is cut off with memory bounded; a reading one gets everything", async () => {
  await using d = await startDaemon();
  const agent = await connectAgent(d, { sessionId: "slow" });
  agent.send("agent_start");
  await agent.waitFrame((f) => f.type === "ack");
  const reader = await openSse(`${d.url}/api/sessions/slow/stream`, d.token);
  await reader.waitEvent((e) => e.event === "agent_start");
  const pid = daemonPid(d.dataDir);
  const chunk = "z".repeat(60_000);
  const total = 800;
  const produced = total * chunk.length;
  const lastSeq = () => Number(reader.events.findLast((e) => e.id !== null)!.id);
  const mib = (n: number) => (n / 2 ** 20).toFixed(1);

  // The reference: the same flood with only the reading client, so ingest's own memory is measured apart.
  await flood(agent, reader, total, chunk);
  const reference = await rssGrowth(pid, () => flood(agent, reader, total, chunk));

  // A stalled reader that is live (resumed at the latest event) while ~48 MB flow past: cut off at 8 MiB.
  const live = await stalledReader(d.port, d.token, "/api/sessions/slow/stream", lastSeq());
  const withLive = await rssGrowth(pid, () => flood(agent, reader, total, chunk));
  const cut = await drain(live, 30_000);

  // A stalled reader still catching up on ~144 MB of history: it holds the queue's high-water mark, no more.
  const history = lastSeq();
  const behind = await stalledReader(d.port, d.token, "/api/sessions/slow/stream?after=0");
  const withBehind = await rssGrowth(pid, () => flood(agent, reader, total, chunk));
  const start = await drain(behind, 500);

  console.log(
    `stalled live reader: got ${mib(cut.received)} of ${
      mib(produced)
    } MiB, then cut off; daemon RSS growth ` +
      `${withLive.toFixed(1)} MiB with it, ${
        withBehind.toFixed(1)
      } MiB with one stalled in its catch-up of ` +
      `${mib(history * chunk.length)} MiB (it got ${mib(start.received)} MiB), ${reference.toFixed(1)} MiB ` +
      `for the same flood with neither`,
  );
  assert.ok(cut.ended, "the live stalled reader was cut off");
  assert.ok(cut.received < produced / 2, `stalled reader got ${cut.received} of ${produced} bytes`);
  assert.ok(cut.received > 0, "it was streaming before it stalled");
  // Without a bound, each would hold ~48 MB (and its encoded copy) in the daemon: +100–120 MiB measured. With
  // it, 2–28 MiB against a reference of 2–53 MiB (GC timing): the margin is wide so that noise cannot fail it.
  const bound = Math.max(reference, 16) + 48;
  assert.ok(withLive < bound, `RSS growth ${withLive} MiB with a stalled live reader (bound ${bound})`);
  assert.ok(
    withBehind < bound,
    `RSS growth ${withBehind} MiB with a stalled catching-up reader (bound ${bound})`,
  );
  assert.ok(start.received > 0, "the catching-up reader gets its history once it reads");
  // A reader that does read, catching up on ~24 MB of history (3 × the backlog bound) while the flood goes
  // on, is never cut off: the catch-up is never queued for it all at once.
  const from = lastSeq() - 400;
  const full = await openSse(`${d.url}/api/sessions/slow/stream?after=${from}`, d.token);
  await flood(agent, reader, 200, chunk);
  const end = lastSeq();
  await full.waitEvent((e) => e.id === String(end), "the history, then live", 60_000);
  assert.deepEqual(
    idsOf(full),
    Array.from({ length: end - from }, (_, i) => from + 1 + i),
    "each once, in order",
  );
  await full.close();
  const res = await d.api("/api/sessions/slow");
  assert.equal(res.status, 200, "the daemon is fine");
  await res.body?.cancel();
  await waitFor(() => reader.events.length > 4 * total + 200, "reader complete");
  await reader.close();
  await agent.close();
});
