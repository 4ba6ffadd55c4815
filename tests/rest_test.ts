import assert from "node:assert/strict";
import { waitFor } from "../testing/daemon.ts";
import { startInProcess } from "../testing/inproc.ts";
import { connectAgent, connectBrowser, userEnd } from "../testing/agent.ts";
import { openSse } from "../testing/sse.ts";
import { PROTOCOL_VERSION } from "../lib/wire.ts";

Deno.test("daemon: prompts and aborts reach the plugin", async (t) => {
  await using d = await startInProcess();
  const a = await connectAgent(d, { sessionId: "p1" });

  await t.step("prompt defaults to steer and carries a promptId", async () => {
    const res = await d.api("/api/sessions/p1/prompt", {
      method: "POST",
      body: JSON.stringify({ message: "go" }),
    });
    assert.equal(res.status, 200);
    const body = await res.json();
    assert.equal(body.ok, true);
    const f = await a.waitFrame((f) => f.type === "prompt" && f.promptId === body.promptId);
    assert.equal(f.message, "go");
    assert.equal(f.deliverAs, "steer");
    assert.equal(f.sessionId, "p1");
  });

  await t.step("followUp is passed through", async () => {
    const res = await d.api("/api/sessions/p1/prompt", {
      method: "POST",
      body: JSON.stringify({ message: "later", deliverAs: "followUp" }),
    });
    const { promptId } = await res.json();
    const f = await a.waitFrame((f) => f.promptId === promptId);
    assert.equal(f.deliverAs, "followUp");
  });

  await t.step("abort", async () => {
    const res = await d.api("/api/sessions/p1/abort", { method: "POST" });
    assert.equal(res.status, 200);
    const { ok, commandId } = await res.json();
    assert.equal(ok, true);
    await a.waitFrame((f) => f.type === "abort" && f.commandId === commandId);
  });

  await t.step("bad bodies answer 400, 413 and 415 with an error", async () => {
    const cases: [RequestInit, number, RegExp][] = [
      [{ body: "{" }, 400, /not valid JSON/],
      [{ body: JSON.stringify({}) }, 400, /message/],
      [{ body: JSON.stringify({ message: "  " }) }, 400, /empty/],
      [{ body: JSON.stringify({ message: "x", deliverAs: "now" }) }, 400, /deliverAs/],
      [{ body: JSON.stringify({ message: "x".repeat(300_000) }) }, 413, /larger/],
      [{ body: "message=x", headers: { "content-type": "text/plain" } }, 415, /application\/json/],
    ];
    for (const [init, status, error] of cases) {
      const res = await d.api("/api/sessions/p1/prompt", { method: "POST", ...init });
      assert.equal(res.status, status, String(init.body).slice(0, 40));
      assert.match(res.headers.get("content-type")!, /application\/json/);
      assert.match((await res.json()).error, error);
    }
  });

  await t.step("unknown session 404, offline session 409", async () => {
    const unknown = await d.api("/api/sessions/ghost/prompt", { method: "POST", body: '{"message":"x"}' });
    assert.equal(unknown.status, 404);
    assert.match((await unknown.json()).error, /ghost/);
    await a.close();
    await waitFor(async () => !(await (await d.api("/api/sessions")).json())[0].online, "offline");
    const offline = await d.api("/api/sessions/p1/prompt", { method: "POST", body: '{"message":"x"}' });
    assert.equal(offline.status, 409);
    assert.match((await offline.json()).error, /offline/);
    const abort = await d.api("/api/sessions/p1/abort", { method: "POST" });
    assert.equal(abort.status, 409);
    await abort.body?.cancel();
  });
});

Deno.test("daemon: an offline session can be deleted with its history; an online one cannot", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "lvmh-test-" });
  try {
    let d = await startInProcess({ dataDir });
    try {
      const a = await connectAgent(d, { sessionId: "old-1" });
      a.send("agent_start");
      const keep = await connectAgent(d, { sessionId: "keep-1" });
      keep.send("agent_start");
      await waitFor(async () => (await (await d.api("/api/sessions/old-1")).json()).lastSeq === 1, "stored");
      const browser = await connectBrowser(d.browserUrl);

      const online = await d.api("/api/sessions/old-1", { method: "DELETE" });
      assert.equal(online.status, 409);
      assert.match((await online.json()).error, /online/);

      await a.close();
      await waitFor(
        async () => (await (await d.api("/api/sessions/old-1")).json()).online === false,
        "offline",
      );
      const res = await d.api("/api/sessions/old-1", { method: "DELETE" });
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { ok: true });
      for (const path of ["/api/sessions/old-1", "/api/sessions/old-1/events"]) {
        assert.equal((await d.api(path)).status, 404, path);
      }
      await browser.waitSessions((sessions) => [...sessions.keys()].join() === "keep-1", "a list without it");
      const again = await d.api("/api/sessions/old-1", { method: "DELETE" });
      assert.equal(again.status, 404);
      await again.body?.cancel();
      await browser.close();
      await keep.close();
    } finally {
      await d.stop();
    }

    // Gone from the file too (a new daemon on the same data dir); the same id starts over if its pi comes back.
    d = await startInProcess({ dataDir });
    try {
      const list = await (await d.api("/api/sessions")).json() as { id: string; lastSeq: number }[];
      assert.deepEqual(list.map((s) => [s.id, s.lastSeq]), [["keep-1", 1]]);
      const back = await connectAgent(d, { sessionId: "old-1" });
      assert.equal(back.welcome.lastSeq, 0);
      await back.close();
    } finally {
      await d.stop();
    }
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("daemon: a malformed percent-escape in a path answers 400 with an error, not 500", async () => {
  await using d = await startInProcess();
  for (const path of ["/api/sessions/%E0%A4%A", "/api/sessions/%zz/events", "/sessions/%E0%A4%A"]) {
    const res = await d.api(path);
    assert.equal(res.status, 400, path);
    assert.match(res.headers.get("content-type")!, /application\/json/, path);
    assert.match((await res.json()).error, /percent-escape/, path);
  }
  // A well-formed escape still reaches the route (and names the decoded id).
  const res = await d.api("/api/sessions/gh%6Fst");
  assert.equal(res.status, 404);
  assert.match((await res.json()).error, /"ghost"/);
});

/** An event as the daemon serves it: the plugin's envelope, `v` included, then the payload. */
function assertEnvelope(e: Record<string, unknown>, sessionId: string, where: string): void {
  assert.equal(e.v, PROTOCOL_VERSION, `${where}: v`);
  assert.equal(e.sessionId, sessionId, `${where}: sessionId`);
  assert.ok(Number.isInteger(e.seq) && Number.isInteger(e.ts), `${where}: seq and ts`);
  assert.equal(typeof e.type, "string", `${where}: type`);
}

Deno.test("daemon: every event it returns carries the whole envelope, v included (REST, /ws, SSE, page)", async () => {
  await using d = await startInProcess();
  const a = await connectAgent(d, { sessionId: "env-1" });
  const first = a.send("message_end", userEnd("u1", "stored before anyone looks"));
  await a.waitFrame((f) => f.type === "ack" && f.lastSeq === first, "first ack");
  const browser = await connectBrowser(d.browserUrl);
  const sse = await openSse(`${d.url}/api/sessions/env-1/stream?after=0`, d.token);
  try {
    browser.send({ type: "subscribe", sessionId: "env-1", after: 0 });
    await browser.waitFrame((f) => f.type === "events" && f.sessionId === "env-1", "catch-up");
    await sse.waitEvent((e) => e.id === String(first), "SSE catch-up");
    // Live: a persisted event and a delta, each served from the ingest path rather than read back from SQLite.
    const start = a.send("message_start", { message: { role: "assistant", id: "a1" } });
    const delta = a.send("message_update", { delta: "Hel" });
    const events = (want: number) =>
      browser.frames.filter((f) => f.type === "events").flatMap((f) => f.events as Record<string, unknown>[])
        .some((e) => e.seq === want);
    await waitFor(() => events(delta), "the delta on /ws");
    await sse.waitEvent((e) => e.event === "message_update", "the delta on SSE");
    await sse.waitEvent((e) => e.id === String(start), "message_start on SSE");

    const ws = browser.frames.filter((f) => f.type === "events").flatMap((f) =>
      f.events as Record<string, unknown>[]
    );
    assert.deepEqual(ws.map((e) => e.seq), [first, start, delta]);
    for (const e of ws) assertEnvelope(e, "env-1", `/ws ${e.type}`);
    assert.equal(sse.events.length, 3);
    for (const m of sse.events) assertEnvelope(JSON.parse(m.data), "env-1", `SSE ${m.event}`);
    for (const query of ["", "?after=0&limit=1", `?before=${start + 1}`]) {
      const res = await d.api(`/api/sessions/env-1/events${query}`);
      assert.equal(res.status, 200);
      const rest = await res.json() as Record<string, unknown>[];
      assert.ok(rest.length > 0, query);
      for (const e of rest) assertEnvelope(e, "env-1", `REST ${query} ${e.type}`);
    }
    // The session page hands its island the latest page of events as props.
    const html = await (await d.api("/sessions/env-1")).text();
    const props = html.match(
      /data-island="SessionView"[^>]*><script type="application\/json">(.*?)<\/script>/s,
    );
    assert.ok(props, "the SessionView island's props");
    const page = JSON.parse(props[1]).events as Record<string, unknown>[];
    assert.deepEqual(page.map((e) => e.seq), [first, start]);
    for (const e of page) assertEnvelope(e, "env-1", `page ${e.type}`);
  } finally {
    await sse.close();
    await browser.close();
    await a.close();
  }
});
