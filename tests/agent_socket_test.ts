import assert from "node:assert/strict";
import { waitFor } from "../testing/daemon.ts";
import { startInProcess } from "../testing/inproc.ts";
import { connectAgent, sessionInfo, userEnd } from "../testing/agent.ts";

const text = (n: number) => `message ${n} `.padEnd(300, "x");

Deno.test("daemon: plugin socket, persistence and REST", async (t) => {
  await using d = await startInProcess();

  await t.step("hello gets welcome with lastSeq 0 and the session is listed online", async () => {
    const a = await connectAgent(d, { sessionId: "s1" });
    assert.equal(a.welcome.lastSeq, 0);
    const res = await d.api("/api/sessions");
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type")!, /application\/json/);
    const list = await res.json();
    assert.equal(list.length, 1);
    assert.equal(list[0].id, "s1");
    assert.equal(list[0].online, true);
    assert.equal(list[0].cwd, "/home/dev/project");
    await a.close();
    await waitFor(async () => (await (await d.api("/api/sessions")).json())[0].online === false, "offline");
  });

  await t.step("events are persisted in order, message_update is not, and paging works", async () => {
    const a = await connectAgent(d, { sessionId: "s2" });
    a.send("agent_start");
    for (let i = 0; i < 10; i++) {
      a.send("message_update", { delta: "d" });
      a.send("message_end", userEnd(`m${i}`, text(i)));
    }
    const last = a.send("agent_end", { usage: { inputTokens: 10, outputTokens: 5, totalCost: 0.01 } });
    await a.waitFrame((f) => f.type === "ack" && f.lastSeq === last, "ack of last");
    const events = await (await d.api("/api/sessions/s2/events")).json();
    assert.equal(events.length, 12);
    assert.deepEqual(events.map((e: { seq: number }) => e.seq), [
      1,
      ...Array.from({ length: 10 }, (_, i) => 3 + 2 * i),
      22,
    ]);
    assert.equal(events[1].message.text, text(0));
    assert.equal(events.at(-1).usage.totalCost, 0.01);
    assert.ok(events.every((e: { type: string }) => e.type !== "message_update"));

    const page = await (await d.api("/api/sessions/s2/events?after=3&limit=2")).json();
    assert.deepEqual(page.map((e: { seq: number }) => e.seq), [5, 7]);
    const older = await (await d.api("/api/sessions/s2/events?before=9&limit=2")).json();
    assert.deepEqual(older.map((e: { seq: number }) => e.seq), [5, 7]);
    const bad = await d.api("/api/sessions/s2/events?limit=100000");
    assert.equal(bad.status, 400);
    assert.match((await bad.json()).error, /limit/);
    const missing = await d.api("/api/sessions/nope/events");
    assert.equal(missing.status, 404);
    await missing.body?.cancel();
    await a.close();
  });

  await t.step("a replay after reconnect is idempotent", async () => {
    const a = await connectAgent(d, { sessionId: "s3" });
    for (let i = 1; i <= 5; i++) a.send("message_end", userEnd(`m${i}`, `t${i}`));
    await a.waitFrame((f) => f.type === "ack" && f.lastSeq === 5);
    await a.close();
    const b = await connectAgent(d, { sessionId: "s3", nextSeq: 1 });
    assert.equal(b.welcome.lastSeq, 5);
    for (let i = 1; i <= 7; i++) b.send("message_end", userEnd(`m${i}`, `again ${i}`));
    await b.waitFrame((f) => f.type === "ack" && f.lastSeq === 7);
    const events = await (await d.api("/api/sessions/s3/events")).json();
    assert.deepEqual(events.map((e: { seq: number }) => e.seq), [1, 2, 3, 4, 5, 6, 7]);
    assert.equal(events[0].message.text, "t1", "the first write wins");
    await b.close();
  });

  await t.step("session_info replaces the snapshot; agent_start/end drive the state", async () => {
    const a = await connectAgent(d, { sessionId: "s4" });
    a.send("session_info", { session: sessionInfo("s4", { name: "renamed", model: "other-model" }) });
    const started = a.send("agent_start");
    await a.waitFrame((f) => f.type === "ack" && f.lastSeq === started);
    let s = (await (await d.api("/api/sessions")).json()).find((x: { id: string }) => x.id === "s4");
    assert.equal(s.name, "renamed");
    assert.equal(s.model, "other-model");
    assert.equal(s.state, "running");
    const ended = a.send("agent_end", { usage: {} });
    await a.waitFrame((f) => f.type === "ack" && f.lastSeq === ended);
    s = (await (await d.api("/api/sessions")).json()).find((x: { id: string }) => x.id === "s4");
    assert.equal(s.state, "idle");
    await a.close();
  });

  await t.step("bye marks the session offline at once", async () => {
    const a = await connectAgent(d, { sessionId: "s5" });
    a.send("bye", { reason: "shutdown" });
    await waitFor(async () => {
      const s = (await (await d.api("/api/sessions")).json()).find((x: { id: string }) => x.id === "s5");
      return s && !s.online;
    }, "s5 offline");
    await a.close();
  });

  await t.step("a second socket for the same session replaces the first", async () => {
    const a = await connectAgent(d, { sessionId: "s6" });
    const b = await connectAgent(d, { sessionId: "s6" });
    assert.equal((await a.closed).code, 4000);
    const res = await d.api("/api/sessions/s6/prompt", {
      method: "POST",
      body: JSON.stringify({ message: "hi" }),
    });
    assert.equal(res.status, 200);
    await res.body?.cancel();
    await b.waitFrame((f) => f.type === "prompt", "prompt on the newer socket");
    await b.close();
  });
});

Deno.test("daemon: bad frames are rejected without hurting anyone", async (t) => {
  await using d = await startInProcess();
  const good = await connectAgent(d, { sessionId: "good" });
  const bad = await connectAgent(d, { sessionId: "bad" });

  await t.step("each malformed frame gets its documented error code", async () => {
    const cases: [string, string][] = [
      ["not json", "bad_json"],
      ["[1,2]", "bad_frame"],
      [JSON.stringify({ v: 2, type: "agent_start", sessionId: "bad", seq: 1, ts: 1 }), "bad_version"],
      [JSON.stringify({ v: 1, type: "teleport", sessionId: "bad", seq: 1, ts: 1 }), "bad_frame"],
      [JSON.stringify({ v: 1, type: "message_update", sessionId: "bad", seq: 1, ts: 1 }), "bad_frame"],
      [JSON.stringify({ v: 1, type: "agent_start", sessionId: "good", seq: 1, ts: 1 }), "wrong_session"],
    ];
    for (const [raw, code] of cases) {
      const before = bad.frames.length;
      bad.sendRaw(raw);
      const f = await bad.waitFrame(
        (f, i = bad.frames.indexOf(f)) => i >= before && f.type === "error",
        code,
      );
      assert.equal(f.code, code, raw);
    }
    assert.equal(bad.socket.readyState, WebSocket.OPEN);
  });

  await t.step("events before hello are refused", async () => {
    const s = new WebSocket(
      d.agentUrl,
      { headers: { authorization: `Bearer ${d.token}` } } as unknown as string[],
    );
    const got: Record<string, unknown>[] = [];
    s.onmessage = (e) => got.push(JSON.parse(e.data));
    await new Promise((r) => s.onopen = r);
    s.send(JSON.stringify({ v: 1, type: "agent_start", sessionId: "x", seq: 1, ts: 1 }));
    const f = await waitFor(() => got.find((f) => f.type === "error"), "error");
    assert.equal(f.code, "hello_required");
    s.close();
    await new Promise((r) => s.onclose = r);
  });

  await t.step("an oversized frame closes only that socket with 1009", async () => {
    bad.sendRaw(
      JSON.stringify({
        v: 1,
        type: "message_update",
        sessionId: "bad",
        seq: 9,
        ts: 1,
        delta: "x".repeat(2_000_000),
      }),
    );
    assert.equal((await bad.closed).code, 1009);
    const seq = good.send("message_end", userEnd("m", "still fine"));
    await good.waitFrame((f) => f.type === "ack" && f.lastSeq === seq);
    const events = await (await d.api("/api/sessions/good/events")).json();
    assert.equal(events.length, 1);
  });
  await good.close();
});
