/**
 * Several daemon processes on one real PostgreSQL database (issue 23): a plugin on replica A, a browser and the
 * REST API on replica B. What B's people do reaches A's plugin once and in order; what A's plugin stores reaches
 * B's browser live, in seq order, once; `GET /api/health` names the database and who holds what.
 */
import assert from "node:assert/strict";
import { startPostgres } from "../../testing/postgres.ts";
import { type DaemonProcess, startDaemon, waitFor } from "../../testing/daemon.ts";
import { connectAgent, connectBrowser, type Frame, userEnd } from "../../testing/agent.ts";
import { startReplicas } from "../../testing/replicas.ts";
import { followSession } from "../../testing/ws_follower.ts";
import { allEvents } from "../../testing/pi.ts";
import { fakePi } from "../../testing/fake_pi.ts";
import { createLvmhAgent } from "../../plugin/lvmh-agent.mjs";
import { opts, tempHome } from "../../testing/plugin_host.ts";

/** Start `n` replicas on `databaseUrl`, each with its own data dir and name. */
async function replicas(databaseUrl: string, n: number): Promise<DaemonProcess[]> {
  const started: DaemonProcess[] = [];
  for (let i = 0; i < n; i++) {
    started.push(
      await startDaemon({ env: { LVMH_DATABASE_URL: databaseUrl, LVMH_REPLICA_ID: `r${i}` } }),
    );
  }
  return started;
}

Deno.test("replicas: a plugin on A, a browser and REST on B", async (t) => {
  await using pg = await startPostgres();
  const url = await pg.newDatabase();
  const [a, b] = await replicas(url, 2);
  try {
    await t.step("health names the database and the replica", async () => {
      const health = await (await fetch(`${b.url}/api/health`)).json();
      assert.equal(health.database, "postgres");
      assert.equal(health.replica, "r1");
    });

    const agent = await connectAgent(a, { sessionId: "rep-1" });
    const browser = await connectBrowser(b.browserUrl);
    try {
      await t.step("B lists A's session online", async () => {
        await browser.waitSessions((s) => s.get("rep-1")?.online === true, "rep-1 online on B", 10_000);
        const holders = await Promise.all(
          [a, b].map(async (d) => (await (await fetch(`${d.url}/api/health`)).json()).holderOf),
        );
        assert.deepEqual(holders, [1, 0]);
      });

      await t.step("A's stored events reach B's browser live, in order, once", async () => {
        browser.send({ type: "subscribe", sessionId: "rep-1", after: 0 });
        const sent: number[] = [];
        for (let i = 0; i < 20; i++) sent.push(agent.send("message_end", userEnd(`u${i}`, `hello ${i}`)));
        await waitFor(() => seenSeqs(browser.frames, "rep-1").length >= sent.length, "B saw all 20", 10_000);
        assert.deepEqual(seenSeqs(browser.frames, "rep-1"), sent);
      });

      await t.step("A's live deltas reach B's browser between the stored events around them", async () => {
        const start = agent.send("message_start", { message: { role: "assistant", id: "a1", text: "" } });
        const deltas: number[] = [];
        for (let i = 0; i < 10; i++) deltas.push(agent.send("message_update", { delta: `d${i}` }));
        // The deltas come before the stored message_start is on B, and are held until it is. The end waits
        // for them: lossy by design, a delta that reaches B after its message ended there is dropped as stale
        // (its text is in the message_end), which a loaded machine showed about once in ten runs.
        await waitFor(
          () => seenOrder(browser.frames, "rep-1").includes(deltas.at(-1)!),
          "the last delta on B",
          10_000,
        );
        const end = agent.send("message_end", userEnd("a1", "done"));
        await waitFor(() => seenOrder(browser.frames, "rep-1").includes(end), "the message_end on B", 10_000);
        const order = seenOrder(browser.frames, "rep-1").filter((seq) => seq >= start);
        // Each delta once, in place.
        assert.deepEqual(order, [start, ...deltas, end]);
      });

      await t.step("prompts and an abort sent on B reach A's plugin once, in order", async () => {
        const ids: string[] = [];
        for (let i = 0; i < 5; i++) {
          const res = await b.api("/api/sessions/rep-1/prompt", {
            method: "POST",
            body: JSON.stringify({ message: `do ${i}` }),
          });
          const body = await res.json();
          assert.ok(res.ok, JSON.stringify(body));
          ids.push(body.promptId);
        }
        const abort = await b.api("/api/sessions/rep-1/abort", { method: "POST" });
        assert.ok(abort.ok, await abort.text());
        await agent.waitFrame((f) => f.type === "abort", "the abort on A's plugin", 5_000);
        const commands = agent.frames.filter((f) => f.type === "prompt" || f.type === "abort");
        assert.deepEqual(
          commands.map((f) => f.type === "prompt" ? f.promptId : "abort"),
          [...ids, "abort"],
        );
      });
    } finally {
      await agent.close();
      await browser.close();
    }
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
});

Deno.test(
  "replicas: the holder SIGKILLed mid-stream, the plugin moves to the other, 0 lost, 0 doubled",
  opts,
  async () => {
    await using pg = await startPostgres();
    await using h = await tempHome();
    await using set = await startReplicas(2, { databaseUrl: await pg.newDatabase() });
    const [r0, r1] = set.replicas;
    const agentUrl = set.balancerUrl.replace("http://", "ws://") + "/agent/ws";
    const fake = fakePi("takeover-1");
    createLvmhAgent({ url: agentUrl, token: set.token, home: h.home })(fake.pi);
    const holderOf = async (url: string) =>
      (await (await fetch(`${url}/api/health`)).json()).holderOf as number;
    try {
      await fake.fire("session_start", { reason: "startup" });
      const holder = await waitFor(
        async () => {
          for (const r of [r0, r1]) if (await holderOf(r.url) === 1) return r;
        },
        "a replica holding takeover-1",
        10_000,
      );
      const survivor = holder === r0 ? r1 : r0;
      // A browser on the survivor the whole time: it must see every stored event once.
      const browser = followSession(
        `${survivor.url.replace("http://", "ws://")}/ws?token=${encodeURIComponent(set.token)}`,
        "takeover-1",
      );
      try {
        const say = async (i: number) => {
          await fake.fire("message_start", { message: { role: "user", content: `m${i}`, timestamp: i } });
          await fake.fire("message_end", { message: { role: "user", content: `m${i}`, timestamp: i } });
        };
        for (let i = 0; i < 100; i++) await say(i);
        await waitFor(() => browser.seen.size >= 50, "the survivor's browser following live", 10_000);
        await holder.kill("SIGKILL");
        for (let i = 100; i < 200; i++) await say(i);
        await waitFor(
          async () => await holderOf(survivor.url) === 1,
          "the plugin held by the survivor",
          15_000,
        );
        await fake.fire("session_shutdown", { reason: "quit" });
        const d = survivor.daemon();
        const stored = await waitFor(
          async () => {
            const evs = await allEvents(d, "takeover-1");
            return evs.some((e) => e.type === "bye") ? evs : null;
          },
          "every event stored, up to the bye",
          20_000,
        );
        const texts = stored.filter((e) => e.type === "message_end").map((e) =>
          (e.message as { text: string }).text
        );
        assert.deepEqual(
          texts,
          Array.from({ length: 200 }, (_, i) => `m${i}`),
          "each message once, in order",
        );
        const seqs = stored.map((e) => e.seq as number);
        assert.deepEqual(seqs, Array.from({ length: seqs.length }, (_, i) => i + 1), "no gap, no repeat");
        await waitFor(() => browser.seen.size === seqs.length, "the survivor's browser saw them all", 10_000);
        assert.deepEqual(
          [...browser.seen.values()].filter((n) => n !== 1),
          [],
          "each seq once in the browser",
        );
      } finally {
        browser.close();
      }
    } finally {
      await fake.fire("session_shutdown", { reason: "quit" }).catch(() => {});
    }
  },
);

Deno.test("replicas: an approval asked on A, answered on B and C at once: one answer wins, delivered once", async () => {
  await using pg = await startPostgres();
  const url = await pg.newDatabase();
  const [a, b, c] = await replicas(url, 3);
  const agent = await connectAgent(a, { sessionId: "ask-1" });
  try {
    for (let round = 1; round <= 5; round++) {
      const id = `ap-${round}`;
      agent.send("approval_request", {
        approvalId: id,
        toolCallId: `call-${id}`,
        toolName: "bash",
        args: { command: `echo ${round}` },
      });
      for (const d of [b, c]) {
        await waitFor(
          async () => {
            const pending = await (await d.api("/api/approvals?state=pending")).json();
            return pending.some((p: { id: string }) => p.id === id);
          },
          `${id} pending on ${d.url}`,
          5_000,
        );
      }
      const answers = await Promise.all(
        [[b, "approve"], [c, "reject"]].map(([d, decision]) =>
          (d as DaemonProcess).api(`/api/approvals/${id}`, {
            method: "POST",
            body: JSON.stringify({ decision }),
          })
        ),
      );
      assert.deepEqual(answers.map((r) => r.status).sort(), [200, 409], `${id}: one answer wins`);
      const winner = await answers.find((r) => r.status === 200)!.json();
      await answers.find((r) => r.status === 409)!.body?.cancel();
      const decision = await agent.waitFrame(
        (f) => f.type === "approval_decision" && f.approvalId === id,
        `${id}'s decision on A's plugin`,
        5_000,
      );
      assert.equal(decision.decision, winner.state === "approved" ? "approve" : "reject");
      for (const d of [a, b, c]) {
        const listed = await (await d.api(`/api/approvals?state=${winner.state}`)).json();
        assert.ok(listed.some((p: { id: string }) => p.id === id), `${id} ${winner.state} on ${d.url}`);
      }
    }
    // A later frame proves nothing else was on its way: each decision reached the plugin once.
    agent.send("message_end", userEnd("after", "after"));
    const last = agent.frames.length;
    await agent.waitFrame((f) => f.type === "ack", "an ack after the rounds");
    assert.ok(agent.frames.length >= last);
    const decisions = agent.frames.filter((f) => f.type === "approval_decision").map((f) => f.approvalId);
    assert.deepEqual(decisions, ["ap-1", "ap-2", "ap-3", "ap-4", "ap-5"]);
  } finally {
    await agent.close();
    await Promise.all([a.stop(), b.stop(), c.stop()]);
  }
});

/** Every seq B's browser got for the session, stored or live, in arrival order. */
function seenOrder(frames: Frame[], sessionId: string): number[] {
  return frames.filter((f) => f.type === "events" && f.sessionId === sessionId)
    .flatMap((f) => (f.events as { seq: number }[]).map((e) => e.seq));
}

function seenSeqs(frames: Frame[], sessionId: string): number[] {
  const seqs: number[] = [];
  for (const f of frames) {
    if (f.type !== "events" || f.sessionId !== sessionId) continue;
    for (const e of f.events as { seq: number; type: string }[]) {
      if (e.type === "message_end") seqs.push(e.seq);
    }
  }
  return seqs;
}
