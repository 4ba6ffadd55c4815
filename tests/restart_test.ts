import assert from "node:assert/strict";
import { startDaemon } from "./_daemon.ts";
import { connectAgent, sessionInfo, userEnd } from "./_agent_client.ts";

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

Deno.test("daemon: with LVMH_RETENTION_DAYS, sessions idle for longer are deleted at start", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "lvmh-restart-" });
  try {
    const d1 = await startDaemon({ dataDir });
    const old = Date.now() - 40 * 24 * 60 * 60 * 1000;
    const stale = await connectAgent(d1, {
      sessionId: "stale",
      session: sessionInfo("stale", { startedAt: old }),
    });
    const fresh = await connectAgent(d1, { sessionId: "fresh" });
    const seqs = [stale.send("agent_start", { ts: old }), fresh.send("agent_start")];
    await Promise.all(
      [stale, fresh].map((a, i) => a.waitFrame((f) => f.type === "ack" && f.lastSeq === seqs[i])),
    );
    await Promise.all([stale.close(), fresh.close()]);
    await d1.stop();

    const d2 = await startDaemon({ dataDir, env: { LVMH_RETENTION_DAYS: "30" } });
    try {
      const list = await (await d2.api("/api/sessions")).json() as { id: string }[];
      assert.deepEqual(list.map((s) => s.id), ["fresh"]);
      assert.match(d2.output(), /deleted 1 session\(s\) idle for more than 30 days/);
    } finally {
      await d2.stop();
    }
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});
