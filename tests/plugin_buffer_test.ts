/**
 * The plugin in-process against the real daemon, itself in-process (testing/inproc.ts; nothing here needs a
 * separate process): the offline buffer (overflow past 10,000 events, memory bound, handler time), seq
 * recovery when the seq file is lost, and frames kept under the daemon's 1 MiB limit.
 */
import assert from "node:assert/strict";
import { freePort, waitFor } from "../testing/daemon.ts";
import { startInProcess } from "../testing/inproc.ts";
import { allEvents } from "../testing/pi.ts";
import { type FakePi, fakePi } from "../testing/fake_pi.ts";
import { createLvmhAgent } from "../plugin/lvmh-agent.mjs";
import { type Ev, opts, overflowEvents, tempHome } from "../testing/plugin_host.ts";

/** Tool results fired while offline: 2,000 past the buffer's 10,000. */
const N = 12_000;
/** How long one handler may block pi's loop beyond the worst moment a reference loop had in the same run. */
const WORST_MARGIN_MS = 50;
/** Rounds of measurement before a worst case over the bound counts. */
const ROUNDS = 3;

const toolEnd = (i: number) => ({
  toolCallId: `c${i}`,
  toolName: "bash",
  result: { content: [{ type: "text", text: `out ${i}` }] },
  isError: false,
});

/** Fire `N` tool results (after an agent_start) at a plugin; its worst and mean handler time in ms. */
function fireToolResults(fake: FakePi): { worst: number; mean: number } {
  let worst = 0;
  let total = 0;
  fake.fireTimed("agent_start");
  for (let i = 0; i < N; i++) {
    const ms = fake.fireTimed("tool_execution_end", toolEnd(i));
    worst = Math.max(worst, ms);
    total += ms;
  }
  return { worst, mean: total / N };
}

/**
 * The worst single iteration of work that cannot stall by itself (serialising the same events, as many
 * times): what the machine's load alone does to a wall-clock worst case right now.
 */
function referenceWorst(): number {
  let worst = 0;
  for (let i = 0; i < N; i++) {
    const t0 = performance.now();
    JSON.stringify({ type: "tool_execution_end", ...toolEnd(i) });
    worst = Math.max(worst, performance.now() - t0);
  }
  return worst;
}

/**
 * Whether the worst handler time stays under the reference measured beside it plus `WORST_MARGIN_MS`. A
 * wall-clock worst case also counts any moment the OS gave the core to another process (141 ms once on a
 * loaded machine), so a round over the bound is measured again on a fresh offline plugin, up to `ROUNDS`
 * rounds: a slow path in the plugin shows in every round, a preemption in one. The rounds past the first use
 * their own unreachable port and session, so they never reach the daemon started afterwards.
 */
async function worstWithinBound(first: { worst: number }, home: string) {
  const rounds: string[] = [];
  let worst = first.worst;
  for (let round = 1;; round++) {
    const reference = referenceWorst();
    rounds.push(`${worst.toFixed(2)} ms (reference ${reference.toFixed(2)} ms)`);
    if (worst < reference + WORST_MARGIN_MS) return { ok: true, rounds };
    if (round === ROUNDS) return { ok: false, rounds };
    const fake = fakePi(`overflow-round-${round}`);
    createLvmhAgent({ url: `ws://127.0.0.1:${freePort()}/agent/ws`, token: "unused", home })(fake.pi);
    await fake.fire("session_start", { reason: "startup" });
    worst = fireToolResults(fake).worst;
    await fake.fire("session_shutdown", { reason: "quit" });
  }
}

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
    const timed = fireToolResults(fake);
    // The mean is robust to one preempted handler (141 ms over 12,000 adds 12 µs); it catches per-event work
    // that grows with the buffer.
    assert.ok(timed.mean < 0.2, `mean handler time ${(timed.mean * 1000).toFixed(1)} µs while offline`);
    const bound = await worstWithinBound(timed, `${h.home}/rounds`);
    assert.ok(
      bound.ok,
      `worst handler time over the reference + ${WORST_MARGIN_MS} ms: ${bound.rounds.join(", ")}`,
    );

    await using d = await startInProcess({ port, token });
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
    await using d = await startInProcess();
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
  await using d = await startInProcess({ port, token });
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
  await using d = await startInProcess();
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
