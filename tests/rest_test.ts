import assert from "node:assert/strict";
import { waitFor } from "./_daemon.ts";
import { startInProcess } from "./_inproc.ts";
import { connectAgent, connectBrowser } from "./_agent_client.ts";

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
