/**
 * The plugin's factory driven in-process by a fake pi host, against the real daemon: buffer overflow past
 * 10,000 events, prompt delivery in every pi state, the settle point on both pi generations, renames, seq
 * recovery when the seq file is lost, oversized messages, and configurations that must stay harmless.
 */
import assert from "node:assert/strict";
import { freePort, startDaemon, waitFor } from "./_daemon.ts";
import { allEvents, fakePi, sessions } from "./_pi.ts";
import { createLvmhAgent, repoFromRemote, toMessage } from "../plugin/lvmh-agent.mjs";

type Ev = Record<string, unknown> & { seq: number; type: string };

async function tempHome() {
  const home = await Deno.makeTempDir({ prefix: "lvmh-plugin-" });
  return {
    home,
    log: () => {
      try {
        return Deno.readTextFileSync(`${home}/.pi/lvmh-agent.log`);
      } catch {
        return "";
      }
    },
    [Symbol.asyncDispose]: async () => {
      await Deno.remove(home, { recursive: true }).catch(() => {});
      // The plugin's batched log and seq writes may still land (and recreate the dir) just after.
      await new Promise((r) => setTimeout(r, 400));
      await Deno.remove(home, { recursive: true }).catch(() => {});
    },
  };
}

const opts = { sanitizeOps: false, sanitizeResources: false };

Deno.test("lvmh-agent maps pi messages to the protocol's Message shape", () => {
  const a = toMessage({
    role: "assistant",
    content: [
      { type: "thinking", thinking: "hmm" },
      { type: "text", text: "Hi " },
      {
        type: "toolCall",
        id: "c1",
        name: "bash",
        arguments: { command: "ls" },
      },
      { type: "text", text: "there" },
    ],
    stopReason: "toolUse",
    timestamp: 1,
  }, "assistant-1-3");
  assert.deepEqual(a, {
    role: "assistant",
    id: "assistant-1-3",
    text: "Hi there",
    thinking: "hmm",
    toolCalls: [{ id: "c1", name: "bash", argsJson: '{"command":"ls"}' }],
    toolCallId: null,
    stopReason: "toolUse",
  });
  const r = toMessage({
    role: "toolResult",
    toolCallId: "c1",
    toolName: "bash",
    content: [{ type: "text", text: "x" }, {
      type: "image",
      data: "",
      mimeType: "image/png",
    }],
    isError: true,
  }, "t");
  assert.equal(r.text, "x[image]");
  assert.equal(r.toolCallId, "c1");
  assert.equal(r.isError, true);
  assert.equal(
    toMessage({ role: "user", content: "plain" }, "u").text,
    "plain",
  );
  const custom = toMessage({
    role: "custom",
    customType: "note",
    content: "a note",
  }, "c");
  assert.equal(custom.role, "system");
  assert.equal(custom.piRole, "custom");
  assert.equal(custom.text, "a note");
  const bash = toMessage({
    role: "bashExecution",
    command: "ls",
    output: "a\n",
  }, "b");
  assert.equal(bash.role, "user");
  assert.equal(bash.text, "!ls\na\n");
  assert.equal(
    toMessage({ role: "compactionSummary", summary: "short" }, "s").text,
    "short",
  );
  assert.equal(
    toMessage({ role: "user", content: "x".repeat(300_000) }, "big").text
      .length,
    100_000,
  );
});

Deno.test("lvmh-agent reads group/project from git remotes", () => {
  assert.equal(
    repoFromRemote("git@gitlab.example.com:group/sub/project.git"),
    "group/sub/project",
  );
  assert.equal(
    repoFromRemote("https://gitlab.example.com/group/project.git"),
    "group/project",
  );
  assert.equal(
    repoFromRemote("https://user@gitlab.example.com/group/project"),
    "group/project",
  );
  assert.equal(
    repoFromRemote("ssh://git@gitlab.example.com:2222/group/project.git"),
    "group/project",
  );
  assert.equal(repoFromRemote("/local/path"), null);
  assert.equal(repoFromRemote("https://host/only"), null);
});

Deno.test(
  "lvmh-agent stays silent and harmless whatever the configuration",
  opts,
  async () => {
    await using h = await tempHome();
    const none = fakePi("silent-1");
    createLvmhAgent({ env: {}, home: h.home })(none.pi);
    assert.equal(none.handlerCount(), 0, "no URL/token: nothing registered");

    // A URL no WebSocket accepts: the factory and every handler still return normally.
    const bad = fakePi("silent-2");
    const secret = "s3cret-token-value";
    createLvmhAgent({ url: `::not a url::?token=${secret}`, token: secret, home: h.home })(bad.pi);
    await bad.fire("session_start", { reason: "startup" });
    await bad.fire("agent_start");
    await bad.fire("message_start", {
      message: { role: "user", content: "x", timestamp: 1 },
    });
    await bad.fire("agent_end", { messages: [] });
    await bad.fire("session_shutdown", { reason: "quit" });
    await waitFor(() => h.log().includes("silent-2"), "the failure logged");
    assert.ok(h.log().includes("***"), h.log());
    assert.equal(h.log().includes(secret), false, "the token never reaches the log");

    // A pi whose ctx throws everywhere: handlers swallow it.
    const broken = fakePi("silent-3");
    createLvmhAgent({
      url: "ws://127.0.0.1:9/agent/ws",
      token: "t",
      home: h.home,
    })(broken.pi);
    broken.ctx.sessionManager = null;
    await broken.fire("session_start", { reason: "startup" });
    await broken.fire("agent_end", { messages: null });
    await waitFor(
      () => h.log().includes("handler session_start failed"),
      "the handler error logged",
    );
  },
);

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
    const events = await waitFor(
      async () => {
        const evs = await allEvents(d, "overflow-1") as Ev[];
        return evs.some((e) => e.type === "buffer_overflow") ? evs : null;
      },
      "overflow notice",
      30_000,
    );
    const dropped = N + 1 - 10_000;
    assert.equal(events.length, 10_001);
    assert.equal(events[0].seq, dropped + 1, "the oldest were dropped");
    assert.equal(events.at(-2)!.seq, N + 1);
    assert.deepEqual(
      { ...events.at(-1), ts: 0, sessionId: "" },
      {
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
  "lvmh-agent delivers prompts when streaming, idle and in the tail window, and aborts",
  opts,
  async () => {
    await using h = await tempHome();
    await using d = await startDaemon();
    const fake = fakePi("deliver-1");
    createLvmhAgent({ url: d.agentUrl, token: d.token, home: h.home })(fake.pi);
    await fake.fire("session_start", { reason: "startup" });
    await waitFor(
      async () => (await sessions(d)).find((s) => s.id === "deliver-1" && s.online),
      "online",
    );
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
    await using d = await startDaemon();
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
      const events = await waitFor(async () => {
        const evs = await allEvents(d, id) as Ev[];
        return evs.some((e) => e.type === "agent_settled") ? evs : null;
      }, `settled (${native ? "native" : "polled"})`);
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

Deno.test("lvmh-agent notices a rename made while pi 0.73.1 is idle", opts, async () => {
  await using h = await tempHome();
  await using d = await startDaemon();
  const fake = fakePi("rename-idle-1");
  createLvmhAgent({ url: d.agentUrl, token: d.token, home: h.home })(fake.pi);
  await fake.fire("session_start", { reason: "startup" });
  await waitFor(async () => (await sessions(d)).find((s) => s.id === "rename-idle-1" && s.online), "online");
  fake.name = "named while idle";
  await waitFor(
    async () => (await sessions(d)).find((s) => s.id === "rename-idle-1")?.name === "named while idle",
    "the new name, without any pi event",
  );
  await fake.fire("session_shutdown", { reason: "quit" });
});

Deno.test("lvmh-agent does not fight a newer connection for its session (close 4000)", opts, async () => {
  await using h = await tempHome();
  await using d = await startDaemon();
  const older = fakePi("replaced-1");
  createLvmhAgent({ url: d.agentUrl, token: d.token, home: h.home })(older.pi);
  await older.fire("session_start", { reason: "startup" });
  await waitFor(
    async () => (await sessions(d)).find((s) => s.id === "replaced-1" && s.online),
    "older online",
  );
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
  const events = await waitFor(
    async () => {
      const evs = await allEvents(d, "bytes-1") as Ev[];
      return evs.some((e) => e.type === "buffer_overflow") ? evs : null;
    },
    "overflow notice",
    30_000,
  );
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
