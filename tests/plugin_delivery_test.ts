/**
 * The plugin in-process against the real daemon, itself in-process (testing/inproc.ts; nothing here needs a
 * separate process): prompt delivery in every pi state, abort, the settle point on both pi generations,
 * renames, and close 4000.
 */
import assert from "node:assert/strict";
import { waitFor } from "../testing/daemon.ts";
import { startInProcess } from "../testing/inproc.ts";
import { allEvents, sessions, settledEvents } from "../testing/pi.ts";
import { fakePi } from "../testing/fake_pi.ts";
import { createLvmhAgent } from "../plugin/lvmh-agent.mjs";
import { type Ev, opts, pluginOnline, tempHome } from "../testing/plugin_host.ts";

Deno.test(
  "lvmh-agent delivers prompts when streaming, idle and in the tail window, and aborts",
  opts,
  async () => {
    await using h = await tempHome();
    await using d = await startInProcess();
    const fake = await pluginOnline(d, h.home, "deliver-1");
    const post = async (body: Record<string, unknown>, what = "prompt") => {
      const res = await d.api(`/api/sessions/deliver-1/${what}`, {
        method: "POST",
        body: JSON.stringify(body),
      });
      assert.equal(res.status, 200);
      await res.body?.cancel();
    };

    // Streaming: sent at once, with deliverAs.
    await fake.fire("agent_start");
    await post({ message: "steer me" });
    await post({ message: "after that", deliverAs: "followUp" });
    await waitFor(() => fake.sent.length === 2, "two prompts");
    assert.deepEqual(fake.sent, [
      { message: "steer me", options: { deliverAs: "steer" } },
      { message: "after that", options: { deliverAs: "followUp" } },
    ]);

    // Tail window: agent_end happened but pi is not idle yet; the prompt must wait for idle.
    fake.idle = false;
    await fake.fire("agent_end", { messages: [] });
    const checks = fake.idleChecks;
    await post({ message: "in the tail" });
    await waitFor(
      () => fake.idleChecks > checks + 3,
      "the plugin polling for idle",
    );
    assert.equal(fake.sent.length, 2, "nothing sent while pi is not idle");
    fake.idle = true;
    await waitFor(() => fake.sent.length === 3, "sent once idle");
    assert.deepEqual(fake.sent[2], {
      message: "in the tail",
      options: undefined,
    });

    // Idle: a second prompt waits for the first one's run to start, then goes in as a steer.
    await post({ message: "second" });
    await new Promise((r) => setTimeout(r, 100)); // give a wrong implementation the chance to send it early
    assert.equal(
      fake.sent.length,
      3,
      "second prompt held until the first run starts",
    );
    await fake.fire("agent_start");
    await waitFor(() => fake.sent.length === 4, "second prompt");
    assert.deepEqual(fake.sent[3], {
      message: "second",
      options: { deliverAs: "steer" },
    });

    await post({}, "abort");
    await waitFor(() => fake.aborts === 1, "abort reached ctx.abort()");
    await fake.fire("session_shutdown", { reason: "quit" });
  },
);

Deno.test(
  "lvmh-agent settles once per run on pi 0.73.1 and 1.6.0, and reports renames",
  opts,
  async () => {
    await using h = await tempHome();
    await using d = await startInProcess();
    for (const native of [false, true]) {
      const id = `settle-${native}`;
      const fake = fakePi(id, { native });
      createLvmhAgent({ url: d.agentUrl, token: d.token, home: h.home })(
        fake.pi,
      );
      await fake.fire("session_start", { reason: "startup" });
      await fake.fire("agent_start");
      fake.idle = false;
      await fake.fire("agent_end", {
        messages: [{
          role: "assistant",
          usage: { input: 5, output: 7, cost: { total: 0.5 } },
        }],
      });
      fake.name = "renamed";
      await fake.fire("turn_end", {});
      if (native) await fake.fire("agent_settled", { aborted: false });
      else fake.idle = true;
      const events = await settledEvents(d, id, `settled (${native ? "native" : "polled"})`);
      assert.deepEqual(events.map((e) => e.type), [
        "agent_start",
        "agent_end",
        "session_info",
        "agent_settled",
      ]);
      assert.deepEqual(events[1].usage, {
        inputTokens: 5,
        outputTokens: 7,
        totalCost: 0.5,
      });
      assert.equal((events[2].session as { name: string }).name, "renamed");
      await waitFor(
        async () => (await sessions(d)).find((s) => s.id === id)?.name === "renamed",
        "name in the list",
      );
      await fake.fire("session_shutdown", { reason: "quit" });
      const all = await allEvents(d, id) as Ev[];
      assert.equal(
        all.filter((e) => e.type === "agent_settled").length,
        1,
        "settled once",
      );
    }
  },
);

Deno.test(
  "lvmh-agent on pi 0.73.1 settles a run even when the next one starts before its idle poll",
  opts,
  async () => {
    await using h = await tempHome();
    await using d = await startInProcess();
    const fake = await pluginOnline(d, h.home, "settle-race-1");
    await fake.fire("agent_start");
    fake.idle = false; // the poll never sees idle: the next prompt comes first
    await fake.fire("agent_end", { messages: [] });
    await fake.fire("agent_start");
    fake.idle = true;
    await fake.fire("agent_end", { messages: [] });
    const events = await waitFor(async () => {
      const evs = await allEvents(d, "settle-race-1") as Ev[];
      return evs.at(-1)?.type === "agent_settled" ? evs : null;
    }, "the second settle");
    assert.deepEqual(events.map((e) => e.type), [
      "agent_start",
      "agent_end",
      "agent_settled",
      "agent_start",
      "agent_end",
      "agent_settled",
    ]);
    await fake.fire("session_shutdown", { reason: "quit" });
  },
);

Deno.test("lvmh-agent notices a rename made while pi 0.73.1 is idle", opts, async () => {
  await using h = await tempHome();
  await using d = await startInProcess();
  const fake = await pluginOnline(d, h.home, "rename-idle-1");
  fake.name = "named while idle";
  await waitFor(
    async () => (await sessions(d)).find((s) => s.id === "rename-idle-1")?.name === "named while idle",
    "the new name, without any pi event",
  );
  await fake.fire("session_shutdown", { reason: "quit" });
});

Deno.test("lvmh-agent does not fight a newer connection for its session (close 4000)", opts, async () => {
  await using h = await tempHome();
  await using d = await startInProcess();
  const older = await pluginOnline(d, h.home, "replaced-1");
  // A second process on the same session (say, `pi -c` in another terminal); in-process it needs its own
  // plugin state, so the link registry is swapped for the duration.
  const key = Symbol.for("lvmh-agent.state");
  const g = globalThis as unknown as Record<symbol, unknown>;
  const saved = g[key];
  delete g[key];
  const newer = fakePi("replaced-1");
  createLvmhAgent({ url: d.agentUrl, token: d.token, home: `${h.home}/second` })(newer.pi);
  await newer.fire("session_start", { reason: "startup" });
  g[key] = saved;
  await waitFor(() => h.log().includes("replaced by a newer connection"), "the older one replaced");
  const post = async (message: string) => {
    const res = await d.api(`/api/sessions/replaced-1/prompt`, {
      method: "POST",
      body: JSON.stringify({ message }),
    });
    assert.equal(res.status, 200);
    await res.body?.cancel();
  };
  await post("one");
  await waitFor(() => newer.sent.length === 1, "the newer connection gets prompts");
  await new Promise((r) => setTimeout(r, 1500)); // a plugin that fought back would have reconnected by now
  await post("two");
  await waitFor(() => newer.sent.length === 2, "still the newer one");
  assert.equal(older.sent.length, 0);
  await newer.fire("session_shutdown", { reason: "quit" });
  await older.fire("session_shutdown", { reason: "quit" });
});
