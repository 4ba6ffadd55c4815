import assert from "node:assert/strict";
import { startDaemon } from "../../testing/daemon.ts";
import { connectAgent } from "../../testing/agent.ts";
import { drain, openSse, stalledReader } from "../../testing/sse.ts";

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

Deno.test("daemon stream: a reader that stops reading is cut off; a reading one gets every frame", async () => {
  await using d = await startDaemon();
  const agent = await connectAgent(d, { sessionId: "flood" });
  const reader = await openSse(`${d.url}/api/stream`, d.token);
  await reader.waitEvent((e) => e.event === "spawn_status");
  const conn = await stalledReader(d.port, d.token, "/api/stream");
  // Each request broadcasts every pending approval, so 40 with 64 KB of args each make ~52 MB of frames.
  const args = { command: "x".repeat(64_000) };
  let produced = 0;
  for (let i = 0; i < 40; i++) {
    agent.send("approval_request", { approvalId: `big-${i}`, toolCallId: `tc-${i}`, toolName: "bash", args });
    const frame = await reader.waitEvent(
      (e) => e.event === "approvals" && e.data.includes(`"big-${i}"`),
      `the frame with big-${i}`,
      30_000,
    );
    produced += frame.data.length;
  }
  const ids = reader.events.filter((e) => e.id !== null).map((e) => Number(e.id));
  assert.deepEqual(
    ids,
    [...new Set(ids)].sort((a, b) => a - b),
    "the reading client: ids strictly increasing",
  );

  const { received, ended } = await drain(conn, 30_000);
  console.log(
    `stalled /api/stream reader: got ${(received / 2 ** 20).toFixed(1)} of ${
      (produced / 2 ** 20).toFixed(1)
    } MiB`,
  );
  assert.ok(ended, "the daemon ended the stalled stream");
  assert.ok(received > 0 && received < produced / 2, `stalled reader got ${received} of ${produced} bytes`);
  await reader.close();
  await agent.close();
});
