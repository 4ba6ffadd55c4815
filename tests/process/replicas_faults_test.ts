/**
 * Replicas on one real PostgreSQL database through what breaks in production: a holder cut off from the
 * database while another replica takes its session over (it must not write after the takeover), and the
 * database restarted under load (every replica reconnects; nothing acknowledged is lost or doubled; a command
 * sent while it was down is delivered after).
 */
import assert from "node:assert/strict";
import { pausableProxy } from "../../testing/pausable_proxy.ts";
import { startPostgres } from "../../testing/postgres.ts";
import { startDaemon, waitFor } from "../../testing/daemon.ts";
import { connectAgent, type Frame, userEnd } from "../../testing/agent.ts";
import { startReplicas } from "../../testing/replicas.ts";
import { allEvents } from "../../testing/pi.ts";
import { fakePi } from "../../testing/fake_pi.ts";
import { createLvmhAgent } from "../../plugin/lvmh-agent.mjs";
import { opts, tempHome } from "../../testing/plugin_host.ts";

const lastAck = (frames: Frame[]) =>
  Math.max(0, ...frames.filter((f) => f.type === "ack").map((f) => f.lastSeq as number));

Deno.test("replicas: a holder partitioned from the database cannot write after another replica took over", async () => {
  await using pg = await startPostgres();
  const url = await pg.newDatabase();
  await using partition = pausableProxy(pg.port);
  const viaProxy = url.replace(`:${pg.port}/`, `:${partition.port}/`);
  await using a = await startDaemon({ env: { LVMH_DATABASE_URL: viaProxy, LVMH_REPLICA_ID: "a" } });
  await using b = await startDaemon({ env: { LVMH_DATABASE_URL: url, LVMH_REPLICA_ID: "b" } });
  const onA = await connectAgent(a, { sessionId: "part-1" });
  for (let i = 1; i <= 5; i++) onA.send("message_end", userEnd(`a${i}`, `from a ${i}`));
  await onA.waitFrame((f) => f.type === "ack" && f.lastSeq === 5, "A's first five acked");

  partition.pause();
  // A takes these, but its database is out of reach: they wait in its append.
  for (let i = 6; i <= 8; i++) onA.send("message_end", userEnd(`a${i}`, `from a ${i}`));
  const onB = await connectAgent(b, { sessionId: "part-1" });
  assert.equal(onB.welcome.lastSeq, 5, "B's welcome counts what A stored before the partition");
  for (let i = 6; i <= 7; i++) onB.send("message_end", userEnd(`b${i}`, `from b ${i}`));
  await onB.waitFrame((f) => f.type === "ack" && f.lastSeq === 7, "B's two acked");

  partition.resume();
  // A's late append carries the old epoch: refused, and A drops the socket it can no longer write for.
  await waitFor(() => onA.socket.readyState === WebSocket.CLOSED, "A's plugin socket closed", 15_000);
  const closed = await onA.closed;
  assert.equal(closed.code, 4000, "A closed its plugin socket as replaced");
  assert.ok(lastAck(onA.frames) <= 5, `A acked nothing past the takeover (acked ${lastAck(onA.frames)})`);
  onB.send("message_end", userEnd("b8", "from b 8"));
  await onB.waitFrame((f) => f.type === "ack" && f.lastSeq === 8, "B goes on");
  const texts = (await allEvents(b, "part-1")).map((e) => (e.message as { text: string }).text);
  assert.deepEqual(
    texts,
    [1, 2, 3, 4, 5].map((i) => `from a ${i}`).concat(["from b 6", "from b 7", "from b 8"]),
  );
  await Promise.all([onA.close(), onB.close()]);
});

Deno.test(
  "replicas: the database restarted under load — every replica reconnects, nothing acknowledged lost",
  opts,
  async () => {
    // Durable: the restart is a crash (immediate shutdown), and a commit acknowledged before it must survive it.
    await using pg = await startPostgres({ durable: true });
    await using h = await tempHome();
    await using set = await startReplicas(2, { databaseUrl: await pg.newDatabase() });
    const fake = fakePi("restart-1");
    createLvmhAgent({ url: set.agentUrl, token: set.token, home: h.home })(fake.pi);
    try {
      await fake.fire("session_start", { reason: "startup" });
      const say = async (i: number) => {
        await fake.fire("message_start", { message: { role: "user", content: `m${i}`, timestamp: i } });
        await fake.fire("message_end", { message: { role: "user", content: `m${i}`, timestamp: i } });
      };
      for (let i = 0; i < 100; i++) await say(i);
      const [r0, r1] = set.replicas;
      for (const r of [r0, r1]) {
        await waitFor(
          async () => (await r.daemon().api("/api/sessions/restart-1")).ok,
          `${r.id} knows restart-1`,
        );
      }
      const restarted = pg.restart(1_000);
      for (let i = 100; i < 200; i++) await say(i);
      await restarted;
      // A prompt from a replica once the plugin is back on one of them: through the queue, to pi.
      await waitFor(
        async () => {
          const res = await r1.daemon().api("/api/sessions/restart-1");
          return res.ok && (await res.json()).online;
        },
        "restart-1 online again",
        20_000,
      );
      const res = await r1.daemon().api("/api/sessions/restart-1/prompt", {
        method: "POST",
        body: JSON.stringify({ message: "after the restart" }),
      });
      assert.ok(res.ok, await res.text());
      for (let i = 200; i < 300; i++) await say(i);
      await waitFor(
        () => fake.sent.some((s) => s.message === "after the restart"),
        "the prompt reached pi",
        20_000,
      );
      await fake.fire("session_shutdown", { reason: "quit" });
      const expected = Array.from({ length: 300 }, (_, i) => `m${i}`);
      for (const r of [r0, r1]) {
        const stored = await waitFor(
          async () => {
            const evs = await allEvents(r.daemon(), "restart-1");
            return evs.some((e) => e.type === "bye") ? evs : null;
          },
          `every event on ${r.id}, up to the bye`,
          30_000,
        );
        const texts = stored.filter((e) => e.type === "message_end").map((e) =>
          (e.message as { text: string }).text
        );
        assert.deepEqual(texts, expected, `${r.id}: each message once, in order`);
        const seqs = stored.map((e) => e.seq as number);
        assert.deepEqual(
          seqs,
          Array.from({ length: seqs.length }, (_, i) => i + 1),
          `${r.id}: no gap, no repeat`,
        );
      }
    } finally {
      await fake.fire("session_shutdown", { reason: "quit" }).catch(() => {});
    }
  },
);
