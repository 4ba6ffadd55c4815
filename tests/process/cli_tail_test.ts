/**
 * `lvmh tail -f` through what interrupts a stream: a daemon SIGKILLed and restarted, a proxy answering 502 while
 * the daemon is away, a session with no event yet. Each time it shows every event exactly once.
 */
import assert from "node:assert/strict";
import { startDaemon, waitFor } from "../../testing/daemon.ts";
import { connectAgent, userEnd } from "../../testing/agent.ts";
import { cliEnv, spawnLvmh } from "../../testing/cli.ts";

const lines = (text: string) => text.split("\n").filter(Boolean).map((l) => JSON.parse(l));

Deno.test("cli: tail -f across a daemon SIGKILL and restart shows every message exactly once", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-cli-" });
  const dataDir = await Deno.makeTempDir({ prefix: "lvmh-cli-data-" });
  try {
    const d1 = await startDaemon({ dataDir });
    const env = cliEnv(dir, d1);
    const a1 = await connectAgent(d1, { sessionId: "follow" });
    const texts: string[] = [];
    const say = (agent: typeof a1) => {
      const text = `message ${texts.length + 1}`;
      texts.push(text);
      return agent.send("message_end", userEnd(`m${texts.length}`, text));
    };
    for (let i = 0; i < 5; i++) say(a1);
    await using json = spawnLvmh(env, ["tail", "follow", "-f", "--json", "--from", "0"]);
    await using text = spawnLvmh(env, ["tail", "follow", "-f", "--from", "0"]);
    await text.waitOut((o) => o.includes("user: message 5\n"), "text tail before the crash");
    // Streamed deltas show as they arrive, then the message is completed, not printed twice.
    const deltas = [a1.send("message_update", { delta: "Hel" }), a1.send("message_update", { delta: "lo" })];
    a1.send("message_end", {
      message: {
        role: "assistant",
        id: "a1",
        text: "Hello there",
        thinking: null,
        toolCalls: [],
        toolCallId: null,
      },
    });
    for (let i = 0; i < 5; i++) say(a1);
    const lastBefore = say(a1);
    await a1.waitFrame((f) => f.type === "ack" && f.lastSeq === lastBefore);
    await json.waitOut((o) => o.includes(`"seq":${lastBefore},`), "json tail before the crash");
    await text.waitOut((o) => o.includes(`user: ${texts.at(-1)}\n`), "text tail before the crash");

    await d1.kill("SIGKILL");
    await d1.stop();
    await json.waitOut(() => /reconnecting/.test(json.stderr()), "the tail notices");
    await using d2 = await startDaemon({ dataDir, port: d1.port });
    const a2 = await connectAgent(d2, { sessionId: "follow" });
    let lastAfter = 0;
    for (let i = 0; i < 10; i++) lastAfter = say(a2);
    await a2.waitFrame((f) => f.type === "ack" && f.lastSeq === lastAfter);
    await json.waitOut((o) => o.includes(`"seq":${lastAfter},`), "json tail after the restart", 30_000);
    await text.waitOut((o) => o.includes(`user: ${texts.at(-1)}\n`), "text tail after the restart", 30_000);

    const seqs = lines(json.stdout()).filter((e) => e.type !== "message_update").map((e) => e.seq);
    const expected = Array.from({ length: lastAfter }, (_, i) => i + 1).filter((s) => !deltas.includes(s));
    assert.deepEqual(seqs, expected, "every persisted event once, in order");
    const out = text.stdout();
    for (const t of texts) {
      assert.equal(out.split(`user: ${t}\n`).length - 1, 1, `"${t}" exactly once`);
    }
    assert.equal(out.split("Hello").length - 1, 1, "streamed text completed, not repeated");
    assert.equal(out.split("assistant: Hello there\n").length - 1, 1);
    await a2.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("cli: tail -f behind a proxy retries its 502s until the daemon answers, then misses nothing", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-cli-" });
  await using d = await startDaemon();
  // A reverse proxy that can drop its open streams and answer 502, as nginx does while the daemon restarts.
  let down = false;
  let refused = 0;
  const open = new Set<() => void>();
  const proxy = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    if (down) {
      refused++;
      return new Response("<html>502 Bad Gateway</html>", {
        status: 502,
        headers: { "content-type": "text/html" },
      });
    }
    const url = new URL(req.url);
    const res = await fetch(`${d.url}${url.pathname}${url.search}`, { headers: req.headers });
    const upstream = res.body!.getReader();
    // The body is relayed through a stream of our own, so the test can cut it mid-way.
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        open.add(() => {
          controller.error(new Error("proxy cut the stream"));
          upstream.cancel().catch(() => {});
        });
      },
      async pull(controller) {
        const { value, done } = await upstream.read();
        if (done) controller.close();
        else controller.enqueue(value);
      },
      cancel: () => upstream.cancel(),
    });
    return new Response(body, { status: res.status, headers: res.headers });
  });
  try {
    const env = cliEnv(dir, { url: `http://127.0.0.1:${proxy.addr.port}`, token: d.token });
    const agent = await connectAgent(d, { sessionId: "proxied" });
    let last = 0;
    for (let i = 1; i <= 3; i++) last = agent.send("message_end", userEnd(`p${i}`, `before ${i}`));
    await using tail = spawnLvmh(env, ["tail", "proxied", "-f", "--json", "--from", "0"]);
    await tail.waitOut((o) => o.includes(`"seq":${last},`), "the first events");
    down = true;
    for (const cut of open) cut();
    await waitFor(() => refused >= 2 || null, "the tail retries through 502s");
    for (let i = 1; i <= 3; i++) last = agent.send("message_end", userEnd(`q${i}`, `during ${i}`));
    await agent.waitFrame((f) => f.type === "ack" && f.lastSeq === last);
    down = false;
    await tail.waitOut(
      (o) => o.includes(`"seq":${last},`),
      "the events sent while the proxy refused",
      20_000,
    );
    assert.deepEqual(lines(tail.stdout()).map((e) => e.seq), [1, 2, 3, 4, 5, 6], "each event once, in order");
    assert.match(tail.stderr(), /reconnecting/);
    await agent.close();
  } finally {
    for (const cut of open) cut();
    await proxy.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("cli: tail -f of a session with no event yet skips nothing across a restart", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-cli-" });
  const dataDir = await Deno.makeTempDir({ prefix: "lvmh-cli-data-" });
  try {
    const d1 = await startDaemon({ dataDir });
    const a1 = await connectAgent(d1, { sessionId: "fresh" });
    // No --from: the latest page, which is empty; the tail has no Last-Event-ID to resume with.
    await using tail = spawnLvmh(cliEnv(dir, d1), ["tail", "fresh", "-f", "--json"]);
    // Live deltas (never stored, no id) until one shows: the tail is connected and still has nothing to resume.
    await waitFor(() => {
      if (tail.stdout().includes('"message_update"')) return true;
      a1.send("message_update", { delta: "typing" });
      return null;
    }, "the tail live");
    await a1.close();
    await d1.kill("SIGKILL");
    await d1.stop();
    await tail.waitOut(() => /reconnecting/.test(tail.stderr()), "the tail notices");
    await using d2 = await startDaemon({ dataDir, port: d1.port });
    const a2 = await connectAgent(d2, { sessionId: "fresh" });
    // More than a latest page (1,000) while the tail is away.
    const sent: number[] = [];
    for (let i = 0; i < 1100; i++) sent.push(a2.send("message_end", userEnd(`f${i}`, `t${i}`)));
    await a2.waitFrame((f) => f.type === "ack" && f.lastSeq === sent.at(-1));
    await tail.waitOut((o) => o.includes(`"seq":${sent.at(-1)},`), "the last event", 30_000);
    const seqs = lines(tail.stdout()).filter((e) => e.type !== "message_update").map((e) => e.seq);
    assert.deepEqual(seqs, sent, "every event once, from the first");
    await a2.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(dataDir, { recursive: true });
  }
});
