/**
 * Retention: a daemon started with LVMH_RETENTION_DAYS deletes the offline sessions idle for longer, at once
 * (in-process, two daemons one after the other on the same data dir).
 */
import assert from "node:assert/strict";
import { startInProcess } from "../testing/inproc.ts";
import { connectAgent, sessionInfo } from "../testing/agent.ts";

Deno.test("daemon: with LVMH_RETENTION_DAYS, sessions idle for longer are deleted at start", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "lvmh-retention-" });
  try {
    const d1 = await startInProcess({ dataDir });
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

    const d2 = await startInProcess({ dataDir, env: { LVMH_RETENTION_DAYS: "30" } });
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
