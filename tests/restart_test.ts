/**
 * The daemon as a process: SIGTERM ends it with exit 0 and close code 1001 for the plugins, and a new process
 * on the same data dir has everything, all offline. (Retention at start is in-process: retention_test.ts.)
 */
import assert from "node:assert/strict";
import { startDaemon } from "../testing/daemon.ts";
import { connectAgent, userEnd } from "../testing/agent.ts";

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
