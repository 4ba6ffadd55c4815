/**
 * The plugin in-process against the real daemon: the offline buffer (overflow past 10,000 events, memory bound),
 * seq recovery when the seq file is lost, and frames kept under the daemon's 1 MiB limit.
 */
import assert from "node:assert/strict";
import { freePort, startDaemon, waitFor } from "./_daemon.ts";
import { allEvents } from "./_pi.ts";
import { fakePi } from "./_fake_pi.ts";
import { createLvmhAgent } from "../plugin/lvmh-agent.mjs";
import { type Ev, opts, overflowEvents, tempHome } from "./_plugin_host.ts";

Deno.test(
  "lvmh-agent buffers 10,000 events offline, drops the oldest and reports the overflow",
  opts,
  async () => {
    await using h = await tempHome();
    const port = freePort();
    const token = "test-token-0123456789abcdef";
    const fake = fakePi("overflow-1");
    createLvmhAgent({
      url: `ws://127.0.0.1:${port}/agent/ws`,
      token,
      home: h.home,
    })(fake.pi);
    await fake.fire("session_start", { reason: "startup" });
    let worst = 0;
    let total = 0;
    fake.fireTimed("agent_start");
    const N = 12_000;
    for (let i = 0; i < N; i++) {
      const ms = fake.fireTimed("tool_execution_end", {
        toolCallId: `c${i}`,
        toolName: "bash",
        result: { content: [{ type: "text", text: `out ${i}` }] },
        isError: false,
      });
      worst = Math.max(worst, ms);
      total += ms;
    }
    assert.ok(
      total / N < 0.2,
      `mean handler time ${(total / N * 1000).toFixed(1)} µs while offline`,
    );
    assert.ok(worst < 50, `worst handler time ${worst.toFixed(2)} ms`);

    await using d = await startDaemon({ port, token });
    const events = await overflowEvents(d, "overflow-1");
    const dropped = N + 1 - 10_000;
    assert.equal(events.length, 10_001);
    assert.equal(events[0].seq, dropped + 1, "the oldest were dropped");
    assert.equal(events.at(-2)!.seq, N + 1);
    assert.deepEqual(
      // v: served by newer daemons (the whole envelope), left out by older ones.
      { ...events.at(-1), ts: 0, sessionId: "", v: 1 },
      {
        v: 1,
        type: "buffer_overflow",
        seq: N + 2,
        ts: 0,
        sessionId: "",
        dropped,
        firstDroppedSeq: 1,
        lastDroppedSeq: dropped,
      },
    );
    // Still working afterwards: the next event goes straight through.
    await fake.fire("agent_end", { messages: [] });
    await waitFor(
      async () => (await allEvents(d, "overflow-1") as Ev[]).some((e) => e.type === "agent_end"),
      "live again",
    );
    await fake.fire("session_shutdown", { reason: "quit" });
    await waitFor(
      async () => (await allEvents(d, "overflow-1") as Ev[]).at(-1)?.type === "bye",
      "bye",
    );
  },
);

Deno.test(
  "lvmh-agent renumbers when its seq file was lost, and clips oversized messages",
  opts,
  async () => {
    await using h = await tempHome();
    await using d = await startDaemon();
    const run = async () => {
      const fake = fakePi("renumber-1");
      createLvmhAgent({ url: d.agentUrl, token: d.token, home: h.home })(
        fake.pi,
      );
      await fake.fire("session_start", { reason: "startup" });
      await fake.fire("agent_start");
      await fake.fire("message_start", {
        message: { role: "user", content: "big", timestamp: 5 },
      });
      await fake.fire("message_end", {
        message: { role: "user", content: "é".repeat(2_000_000), timestamp: 5 },
      });
      await fake.fire("agent_end", { messages: [] });
      await fake.fire("session_shutdown", { reason: "quit" });
    };
    await run();
    const first = await allEvents(d, "renumber-1") as Ev[];
    assert.deepEqual(first.map((e) => e.seq), [1, 2, 3, 4, 5, 6]);
    assert.ok((first[2].message as { text: string }).text.length <= 100_000);
    await Deno.remove(`${h.home}/.pi/lvmh-agent/seq/renumber-1`);
    await run();
    const all = await waitFor(async () => {
      const evs = await allEvents(d, "renumber-1") as Ev[];
      return evs.filter((e) => e.type === "bye").length === 2 ? evs : null;
    }, "second run");
    assert.deepEqual(all.map((e) => e.seq), [
      1,
      2,
      3,
      4,
      5,
      6,
      7,
      8,
      9,
      10,
      11,
      12,
    ]);
    assert.deepEqual(
      all.slice(6).map((e) => e.type),
      [
        "agent_start",
        "message_start",
        "message_end",
        "agent_end",
        "agent_settled",
        "bye",
      ],
    );
    await waitFor(
      () => h.log().includes("renumbered"),
      "the renumbering logged",
    );
  },
);

Deno.test("lvmh-agent bounds the offline buffer's memory as well as its length", opts, async () => {
  await using h = await tempHome();
  const port = freePort();
  const token = "test-token-0123456789abcdef";
  const fake = fakePi("bytes-1");
  createLvmhAgent({ url: `ws://127.0.0.1:${port}/agent/ws`, token, home: h.home })(fake.pi);
  await fake.fire("session_start", { reason: "startup" });
  // 1,000 tool results of 90,000 characters each: 90 M characters, far past the memory bound.
  const big = "x".repeat(90_000);
  for (let i = 0; i < 1000; i++) {
    fake.fireTimed("message_end", {
      message: { role: "toolResult", toolCallId: `c${i}`, toolName: "read", content: big, timestamp: i },
    });
  }
  await using d = await startDaemon({ port, token });
  const events = await overflowEvents(d, "bytes-1");
  const kept = events.filter((e) => e.type === "message_end").length;
  assert.ok(kept > 100 && kept < 400, `${kept} big events kept`);
  const notice = events.at(-1)!;
  assert.equal(notice.type, "buffer_overflow");
  assert.equal(notice.dropped, 1000 - kept);
  assert.equal(notice.firstDroppedSeq, 1);
  await fake.fire("session_shutdown", { reason: "quit" });
});

Deno.test("lvmh-agent keeps every frame under the daemon's 1 MiB limit", opts, async () => {
  await using h = await tempHome();
  await using d = await startDaemon();
  const fake = fakePi("bigframe-1");
  createLvmhAgent({ url: d.agentUrl, token: d.token, home: h.home })(fake.pi);
  await fake.fire("session_start", { reason: "startup" });
  const huge = "é\u0001".repeat(60_000); // multi-byte and escaped characters: 120,000 chars, ~420 KB as JSON
  await fake.fire("message_end", {
    message: {
      role: "assistant",
      content: [
        { type: "thinking", thinking: huge },
        { type: "text", text: huge },
        ...Array.from(
          { length: 6 },
          (_, i) => ({ type: "toolCall", id: `c${i}`, name: "write", arguments: { huge } }),
        ),
      ],
      timestamp: 1,
    },
  });
  await fake.fire("agent_end", { messages: [] });
  const events = await waitFor(async () => {
    const evs = await allEvents(d, "bigframe-1") as Ev[];
    return evs.some((e) => e.type === "agent_end") ? evs : null;
  }, "both events stored on the same socket");
  assert.equal(events[0].type, "message_end");
  const m = events[0].message as { text: string; toolCalls: unknown[] };
  assert.ok(m.text.length <= 20_000 && m.text.startsWith("é"));
  assert.equal(m.toolCalls.length, 6);
  await fake.fire("session_shutdown", { reason: "quit" });
});
