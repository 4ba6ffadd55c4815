import assert from "node:assert/strict";
import { startDaemon } from "./_daemon.ts";
import { connectAgent } from "./_agent_client.ts";
import { openSse } from "./_sse.ts";

Deno.test("daemon stream: snapshots, then numbered frames; resume replays exactly what was missed", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "lvmh-sse-daemon-" });
  try {
    const d1 = await startDaemon({ dataDir });
    const url = `${d1.url}/api/stream`;
    const first = await openSse(url, d1.token);
    assert.equal(first.status, 200);
    assert.match(first.headers.get("content-type") ?? "", /^text\/event-stream/);
    const spawn = await first.waitEvent((e) => e.event === "spawn_status", "the spawn snapshot");
    assert.ok(first.events.some((e) => e.event === "session_list" && e.id === null), "list snapshot first");
    assert.ok(spawn.id, "the last snapshot carries the cursor");
    assert.deepEqual(JSON.parse(spawn.data).jobs, []);
    assert.deepEqual(
      first.events.map((e) => e.event),
      ["session_list", "approvals", "spawn_status"],
      "a fresh client gets the session list, the waiting approvals and the spawn jobs",
    );
    assert.deepEqual(JSON.parse(first.events[1].data).pending, []);

    const agent = await connectAgent(d1, { sessionId: "dash" });
    const online = await first.waitEvent(
      (e) => e.id !== null && e.data.includes('"dash"') && e.id !== spawn.id,
      "the new session in a numbered frame",
    );
    assert.ok(Number(online.id) > Number(spawn.id), "cursor increases");

    // An approval request reaches the stream as a numbered `approvals` frame naming it.
    agent.send("approval_request", { approvalId: "ap-d", toolCallId: "tc-d", toolName: "bash", args: {} });
    const asked = await first.waitEvent(
      (e) => e.event === "approvals" && e.id !== null && e.data.includes('"ap-d"'),
      "the approvals frame",
    );
    assert.ok(Number(asked.id) > Number(online.id), "cursor increases");
    assert.deepEqual(JSON.parse(asked.data).pending.map((a: { id: string }) => a.id), ["ap-d"]);

    // Resuming after the snapshot's cursor gives the same frames with the same ids, no snapshot again.
    const resumed = await openSse(url, d1.token, { lastEventId: spawn.id! });
    await resumed.waitEvent((e) => e.id === asked.id, "the missed frames");
    const after = (c: typeof first) =>
      c.events.filter((e) => e.id !== null && Number(e.id) > Number(spawn.id)).map((e) => e.id);
    assert.deepEqual(after(resumed).slice(0, after(first).length), after(first));
    assert.ok(!resumed.events.some((e) => e.event === "spawn_status"), "no snapshot on an exact resume");
    const ids = resumed.events.map((e) => Number(e.id));
    assert.deepEqual(ids, [...ids].sort((a, b) => a - b), "ids increase");

    // A cursor from nowhere (or from before a restart) gets fresh snapshots.
    const stale = await openSse(url, d1.token, { lastEventId: 5 });
    await stale.waitEvent((e) => e.event === "spawn_status");
    const list = stale.events.find((e) => e.event === "session_list")!;
    assert.ok(JSON.parse(list.data).sessions.some((s: { id: string }) => s.id === "dash"));
    const waiting = stale.events.find((e) => e.event === "approvals")!;
    assert.deepEqual(JSON.parse(waiting.data).pending.map((a: { id: string }) => a.id), ["ap-d"]);
    await Promise.all([first.close(), resumed.close(), stale.close(), agent.close()]);
    await d1.kill("SIGKILL");
    await d1.stop();

    await using d2 = await startDaemon({ dataDir, port: d1.port });
    const again = await openSse(`${d2.url}/api/stream`, d2.token, { lastEventId: online.id! });
    const snap = await again.waitEvent((e) => e.event === "spawn_status", "snapshots after a restart");
    assert.ok(Number(snap.id) > Number(online.id), "cursors keep increasing across a restart");
    const sessions = JSON.parse(again.events.find((e) => e.event === "session_list")!.data).sessions;
    assert.deepEqual(sessions.map((s: { id: string }) => s.id), ["dash"], "state survives in SQLite");
    await again.close();
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});
