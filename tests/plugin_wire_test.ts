/**
 * The plugin's optional protocol parts, in-process against a loopback fake daemon: `batch` frames when the
 * daemon lists the feature, the application heartbeat (ping/pong, a silent daemon is dropped and the
 * socket reopened with nothing lost or repeated; an older daemon's error answer counts as alive),
 * `command_result` for commands that carry a commandId, and the `session_notice` of a resume pi had not saved.
 */
import assert from "node:assert/strict";
import { waitFor } from "../testing/daemon.ts";
import { fakePi } from "../testing/fake_pi.ts";
import { createLvmhAgent } from "../plugin/lvmh-agent.mjs";
import { type FakeDaemon, fakeDaemon, type Frame, opts, tempHome } from "../testing/plugin_host.ts";
import { MAX_FRAME_BYTES } from "../lib/wire.ts";

const fast = { pingMs: 50, deadMs: 400 };

function plugin(d: FakeDaemon, home: string, id: string) {
  const fake = fakePi(id);
  createLvmhAgent({ url: d.url, token: d.token, home, heartbeat: fast })(fake.pi);
  return fake;
}
const events = (d: FakeDaemon) => d.frames.filter((f) => f.seq > 0);

Deno.test(
  "batch: with the feature, queued events go many to a frame, each once, under the limit",
  opts,
  async () => {
    await using d = fakeDaemon({ features: ["batch"] });
    await using h = await tempHome();
    const fake = plugin(d, h.home, "batch-1");
    await fake.fire("session_start", { reason: "startup" });
    // Queued before the welcome can come: the replay after it has many to send at once.
    const big = "y".repeat(50_000);
    for (let i = 0; i < 300; i++) {
      await fake.fire("tool_execution_end", {
        toolCallId: `t${i}`,
        toolName: "bash",
        result: { content: [{ type: "text", text: big }] },
      });
    }
    await waitFor(() => events(d).length >= 300, "300 events", 20_000);
    const batches = d.frames.filter((f) => f.type === "batch");
    assert.ok(batches.length >= 1, "batch frames were used");
    assert.ok(batches.some((b) => (b.events as Frame[]).length > 1));
    for (const b of batches) assert.equal(b.seq, 0);
    assert.ok(Math.max(...d.sizes) < MAX_FRAME_BYTES, `largest frame ${Math.max(...d.sizes)} bytes`);
    const seqs = events(d).map((f) => f.seq);
    assert.equal(new Set(seqs).size, seqs.length, "each event once");
    assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b), "in order");
    await fake.fire("session_shutdown", { reason: "quit" });
  },
);

Deno.test("batch: without the feature every event is its own frame", opts, async () => {
  await using d = fakeDaemon();
  await using h = await tempHome();
  const fake = plugin(d, h.home, "batch-2");
  await fake.fire("session_start", { reason: "startup" });
  for (let i = 0; i < 20; i++) await fake.fire("agent_start");
  await waitFor(() => events(d).length >= 20, "20 events");
  assert.equal(d.frames.filter((f) => f.type === "batch").length, 0);
  await fake.fire("session_shutdown", { reason: "quit" });
});

Deno.test(
  "heartbeat: pings the daemon, drops a silent one and reconnects with nothing lost or repeated",
  opts,
  async () => {
    await using d = fakeDaemon();
    await using h = await tempHome();
    const fake = plugin(d, h.home, "beat-1");
    await fake.fire("session_start", { reason: "startup" });
    await waitFor(() => d.frames.filter((f) => f.type === "ping").length >= 3, "pings");
    const ping = d.frames.find((f) => f.type === "ping")!;
    assert.deepEqual([ping.v, ping.seq, ping.sessionId], [1, 0, "beat-1"]);
    assert.equal(d.hellos(), 1, "answered pings keep the socket");
    await fake.fire("agent_start");
    await waitFor(() => events(d).length === 1, "first event");
    d.freeze(); // the socket stays open, nothing on it is read or answered
    for (let i = 0; i < 5; i++) await fake.fire("agent_end", { messages: [] });
    await waitFor(() => d.hellos() === 2, "reconnected after the silence", 10_000);
    // The five agent_end and the settle that follows them (the fake plays pi 0.73.1, which polls for it).
    await waitFor(
      () => events(d).some((f) => f.type === "agent_settled"),
      "the events sent into the silence",
    );
    assert.deepEqual(events(d).map((f) => f.seq), [1, 2, 3, 4, 5, 6, 7], "each once, none lost");
    await fake.fire("session_shutdown", { reason: "quit" }); // flushes the log
    assert.equal((h.log().match(/daemon silent/g) ?? []).length, 1, h.log());
  },
);

Deno.test(
  "heartbeat: an older daemon's error answer to ping counts as alive and is logged once",
  opts,
  async () => {
    await using d = fakeDaemon({ errorOnPing: true });
    await using h = await tempHome();
    const fake = plugin(d, h.home, "beat-2");
    await fake.fire("session_start", { reason: "startup" });
    // Many times the dead period: still the first socket.
    await waitFor(() => d.frames.filter((f) => f.type === "ping").length >= 30, "pings", 10_000);
    assert.equal(d.hellos(), 1);
    await fake.fire("session_shutdown", { reason: "quit" }); // flushes the log
    assert.equal((h.log().match(/bad_frame/g) ?? []).length, 1, h.log());
  },
);

Deno.test("commands with a commandId are answered with command_result", opts, async () => {
  await using d = fakeDaemon();
  await using h = await tempHome();
  const fake = plugin(d, h.home, "cmd-1");
  await fake.fire("session_start", { reason: "startup" });
  await fake.fire("agent_start");
  await waitFor(() => events(d).length === 1, "welcomed");
  const result = (id: string) =>
    d.waitFrame((f) => f.type === "command_result" && f.commandId === id, `command_result ${id}`);
  d.send({ type: "prompt", promptId: "p1", message: "hi", deliverAs: "steer", commandId: "c-prompt" });
  const r1 = await result("c-prompt");
  assert.equal(r1.ok, true);
  assert.equal(fake.sent.at(-1)?.message, "hi");
  d.send({ type: "abort", commandId: "c-abort" });
  assert.equal((await result("c-abort")).ok, true);
  assert.equal(fake.aborts, 1);
  d.send({ type: "model_switch", commandId: "c-new" });
  const r3 = await result("c-new");
  assert.equal(r3.ok, false);
  assert.match(String(r3.error), /unknown command/);
  d.send({ type: "prompt", promptId: "p2", message: "no id", deliverAs: "steer" });
  await waitFor(() => fake.sent.some((s) => s.message === "no id"), "prompt without commandId delivered");
  assert.equal(
    d.frames.filter((f) => f.type === "command_result").length,
    3,
    "nothing for a command without id",
  );
  await fake.fire("session_shutdown", { reason: "quit" });
});

Deno.test(
  "session_notice: LVMH_RESUME_NOTICE=not-saved sends one not_saved notice after the hello, else none",
  opts,
  async () => {
    await using d = fakeDaemon();
    await using h = await tempHome();
    const fake = fakePi("notice-1");
    createLvmhAgent({ url: d.url, token: d.token, home: h.home, env: { LVMH_RESUME_NOTICE: "not-saved" } })(
      fake.pi,
    );
    await fake.fire("session_start", { reason: "startup" });
    await fake.fire("agent_start");
    await waitFor(() => events(d).length >= 2, "the notice and agent_start");
    const [first, second] = events(d);
    assert.equal(first.type, "session_notice");
    assert.equal(first.kind, "not_saved");
    assert.match(String(first.text), /^pi had not saved this conversation yet/);
    assert.equal(second.type, "agent_start");
    // Without the variable (a first start, or a resume pi had saved): no notice.
    await fake.fire("session_shutdown", { reason: "quit" });

    await using d2 = fakeDaemon();
    const plain = plugin(d2, h.home, "notice-2");
    await plain.fire("session_start", { reason: "startup" });
    await plain.fire("agent_start");
    await waitFor(() => events(d2).length >= 1, "agent_start");
    assert.deepEqual(events(d2).map((f) => f.type), ["agent_start"]);
    await plain.fire("session_shutdown", { reason: "quit" });
  },
);
