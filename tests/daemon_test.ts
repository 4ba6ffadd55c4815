import assert from "node:assert/strict";
import { startDaemon, waitFor } from "./_daemon.ts";
import { connectAgent, connectBrowser, sessionInfo } from "./_agent_client.ts";

const text = (n: number) => `message ${n} `.padEnd(300, "x");
const userEnd = (id: string, body: string) => ({
  message: { role: "user", id, text: body, thinking: null, toolCalls: [], toolCallId: null },
});

Deno.test("daemon: plugin socket, persistence and REST", async (t) => {
  await using d = await startDaemon();

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

Deno.test("daemon: prompts and aborts reach the plugin", async (t) => {
  await using d = await startDaemon();
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
    assert.deepEqual(await res.json(), { ok: true });
    await a.waitFrame((f) => f.type === "abort");
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

Deno.test("daemon: bad frames are rejected without hurting anyone", async (t) => {
  await using d = await startDaemon();
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

Deno.test("daemon: browsers get the session list and live events", async (t) => {
  await using d = await startDaemon();
  const browser = await connectBrowser(d.browserUrl);

  await t.step("session_list on connect and on change", async () => {
    const first = await browser.waitFrame((f) => f.type === "session_list");
    assert.deepEqual(first.sessions, []);
    await browser.waitFrame((f) => f.type === "spawn_status");
    const a = await connectAgent(d, { sessionId: "live" });
    await browser.waitFrame(
      (f) =>
        f.type === "session_list" &&
        (f.sessions as { id: string; online: boolean }[]).some((s) => s.id === "live" && s.online),
      "list with live online",
    );
    await a.close();
  });

  await t.step("subscribe delivers persisted events and deltas in seq order, with catch-up", async () => {
    const a = await connectAgent(d, { sessionId: "live" });
    const early = a.send("message_end", userEnd("u1", "before subscribe"));
    await a.waitFrame((f) => f.type === "ack" && f.lastSeq === early);
    browser.send({ type: "subscribe", sessionId: "live", after: 0 });
    const caught = await browser.waitFrame((f) => f.type === "events" && f.sessionId === "live", "catch-up");
    assert.deepEqual((caught.events as { seq: number }[]).map((e) => e.seq), [early]);
    a.send("message_start", { message: { role: "assistant", id: "a1" } });
    a.send("message_update", { delta: "Hel" });
    a.send("message_update", { delta: "lo" });
    const end = a.send("message_end", {
      message: {
        role: "assistant",
        id: "a1",
        text: "Hello",
        thinking: null,
        toolCalls: [],
        toolCallId: null,
      },
    });
    await waitFor(
      () =>
        browser.frames.some((f) =>
          f.type === "events" && (f.events as { seq: number }[]).some((e) => e.seq === end)
        ),
      "message_end live",
    );
    const seen = browser.frames.filter((f) => f.type === "events").flatMap((f) =>
      f.events as { seq: number; type: string }[]
    );
    assert.deepEqual(seen.map((e) => e.seq), [early, early + 1, early + 2, early + 3, end]);
    assert.deepEqual(
      seen.filter((e) => e.type === "message_update").map((e) => (e as unknown as { delta: string }).delta),
      [
        "Hel",
        "lo",
      ],
    );
    browser.send({ type: "unsubscribe", sessionId: "live" });
    browser.send({ type: "subscribe", sessionId: "not a valid id!" });
    const err = await browser.waitFrame((f) => f.type === "error", "error frame");
    assert.match(err.message as string, /session id/);
    await a.close();
  });
  await browser.close();
});

Deno.test("daemon: a browser that stops reading is disconnected, others are not", async () => {
  await using d = await startDaemon();
  // A raw socket that completes the handshake and never reads again.
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: d.port });
  const key = btoa("0123456789abcdef");
  await conn.write(new TextEncoder().encode(
    `GET /ws?token=${d.token} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
  ));
  const head = new Uint8Array(4096);
  const n = await conn.read(head);
  assert.match(new TextDecoder().decode(head.subarray(0, n!)), /101 Switching Protocols/);
  await conn.write(new Uint8Array([0x81, 0x80 | 0, 1, 2, 3, 4])); // masked empty text frame: harmless
  // Subscribe: masked text frame with the JSON.
  const payload = new TextEncoder().encode(JSON.stringify({ type: "subscribe", sessionId: "flood" }));
  const mask = [7, 7, 7, 7];
  const frame = new Uint8Array([
    0x81,
    0x80 | payload.length,
    ...mask,
    ...payload.map((b, i) => b ^ mask[i % 4]),
  ]);
  await conn.write(frame);

  const reader = await connectBrowser(d.browserUrl);
  reader.send({ type: "subscribe", sessionId: "flood" });
  const a = await connectAgent(d, { sessionId: "flood" });
  const big = "y".repeat(60_000);
  const gotSeq = (seq: number) =>
    reader.frames.some((f) =>
      f.type === "events" && (f.events as { seq: number }[]).some((e) => e.seq === seq)
    );
  // Bursts of 20 the healthy reader keeps up with; the stalled one falls further behind with each.
  let last = 0;
  for (let burst = 0; burst < 20; burst++) {
    for (let i = 0; i < 20; i++) last = a.send("message_end", userEnd(`m${burst}-${i}`, big));
    await waitFor(() => gotSeq(last), `reader got seq ${last}`, 30_000);
  }
  // Now drain the stalled socket: it must end in a close frame 4001 before the flood was complete.
  const close = await readUntilClose(conn, 30_000);
  assert.equal(close.code, 4001, "closed as a slow consumer");
  assert.ok(close.dataBytes < 400 * 60_000, `got ${close.dataBytes} bytes, less than the whole flood`);
  assert.equal(reader.socket.readyState, WebSocket.OPEN);
  conn.close();
  await a.close();
  await reader.close();
});

/** Read server frames off a raw socket until a close frame; returns its code and the data bytes before it. */
async function readUntilClose(conn: Deno.Conn, timeoutMs: number) {
  let buf = new Uint8Array(0);
  let dataBytes = 0;
  const timer = setTimeout(() => conn.close(), timeoutMs);
  const chunk = new Uint8Array(1 << 16);
  try {
    while (true) {
      let at = 0;
      while (buf.length - at >= 2) {
        const opcode = buf[at] & 0x0f;
        let len = buf[at + 1] & 0x7f;
        let head = 2;
        if (len === 126) [len, head] = [buf.length - at >= 4 ? (buf[at + 2] << 8) | buf[at + 3] : -1, 4];
        else if (len === 127) {
          len = buf.length - at >= 10
            ? Number(new DataView(buf.buffer, buf.byteOffset + at + 2, 8).getBigUint64(0))
            : -1;
          head = 10;
        }
        if (len < 0 || buf.length - at < head + len) break;
        if (opcode === 8) return { code: (buf[at + head] << 8) | buf[at + head + 1], dataBytes };
        dataBytes += len;
        at += head + len;
      }
      buf = buf.slice(at);
      const n = await conn.read(chunk);
      if (n === null) throw new Error("socket ended without a close frame");
      const next = new Uint8Array(buf.length + n);
      next.set(buf);
      next.set(chunk.subarray(0, n), buf.length);
      buf = next;
    }
  } finally {
    clearTimeout(timer);
  }
}

Deno.test("daemon: restart keeps sessions and events, all offline", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "lvmh-restart-" });
  try {
    const d1 = await startDaemon({ dataDir });
    const a = await connectAgent(d1, { sessionId: "keep" });
    let last = 0;
    for (let i = 0; i < 20; i++) last = a.send("message_end", userEnd(`m${i}`, `t${i}`));
    await a.waitFrame((f) => f.type === "ack" && f.lastSeq === last);
    const status = await d1.kill("SIGTERM");
    assert.equal(status.code, 0, "clean exit on SIGTERM");
    assert.equal((await a.closed).code, 1001, "going-away close code");
    await d1.stop();

    await using d2 = await startDaemon({ dataDir });
    const list = await (await d2.api("/api/sessions")).json();
    assert.equal(list.length, 1);
    assert.equal(list[0].online, false);
    assert.equal(list[0].lastSeq, 20);
    const events = await (await d2.api("/api/sessions/keep/events")).json();
    assert.equal(events.length, 20);
    const b = await connectAgent(d2, { sessionId: "keep" });
    assert.equal(b.welcome.lastSeq, 20);
    await b.close();
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});
