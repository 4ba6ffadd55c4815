/**
 * Tool approvals through the real daemon with a scripted plugin: the request is listed over REST and /ws,
 * answers are first-writer-wins, and neither a pending request nor a stored decision is lost when the daemon
 * is SIGKILLed or the plugin reconnects. The daemon is built in this process (testing/inproc.ts: REST straight
 * to its handler, the sockets over loopback); only the SIGKILL test starts `main.ts` as a process, because a
 * SIGKILL needs one. (The real pi on both versions: plugin_approvals tests.)
 */
import assert from "node:assert/strict";
import { startDaemon } from "../testing/daemon.ts";
import { startInProcess } from "../testing/inproc.ts";
import { connectAgent, connectBrowser, type Frame } from "../testing/agent.ts";
import { ConfigError, loadConfig } from "../lib/config.ts";

const request = (approvalId: string) => ({
  approvalId,
  toolCallId: `call-${approvalId}`,
  toolName: "bash",
  args: { command: "echo hello" },
});

Deno.test("approvals: listed, decided once, delivered, applied", async (t) => {
  await using d = await startInProcess({ env: { LVMH_ASK: "bash,edit" } });
  const a = await connectAgent(d, { sessionId: "ap1" });
  const browser = await connectBrowser(d.browserUrl);
  try {
    await t.step("welcome carries the ask set and features", () => {
      assert.deepEqual(a.welcome.policy, { ask: ["bash", "edit"] });
      assert.deepEqual(a.welcome.features, ["batch"]);
    });

    await t.step("a request is pending over REST and on /ws", async () => {
      a.send("approval_request", request("r1"));
      await browser.waitFrame(
        (f) => f.type === "approvals" && (f.pending as { id: string }[]).some((p) => p.id === "r1"),
        "approvals frame with r1",
      );
      const pending = await (await d.api("/api/approvals?state=pending")).json();
      assert.deepEqual(pending.map((p: { id: string; state: string }) => [p.id, p.state]), [[
        "r1",
        "pending",
      ]]);
      assert.deepEqual(pending[0].args, { command: "echo hello" });
      await browser.waitSessions((s) => s.get("ap1")?.waiting === 1, "waiting: 1 on the session row");
    });

    await t.step("two answers at once: one wins, the other is the same record or 409", async () => {
      const answers = await Promise.all(
        ["approve", "reject"].map((decision) =>
          d.api("/api/approvals/r1", { method: "POST", body: JSON.stringify({ decision }) })
        ),
      );
      const statuses = answers.map((r) => r.status).sort();
      assert.deepEqual(statuses, [200, 409]);
      const winner = await answers.find((r) => r.status === 200)!.json();
      await answers.find((r) => r.status === 409)!.body?.cancel();
      const decision = await a.waitFrame((f) => f.type === "approval_decision", "approval_decision");
      assert.equal(decision.approvalId, "r1");
      assert.equal(decision.decision, winner.state === "approved" ? "approve" : "reject");
      assert.equal(decision.by, "bootstrap", "the bootstrap token's name");
      const again = await d.api("/api/approvals/r1", {
        method: "POST",
        body: JSON.stringify({ decision: decision.decision }),
      });
      assert.equal(again.status, 200);
      assert.deepEqual(await again.json(), winner, "the same answer again is the same record");
      assert.equal(a.frames.filter((f) => f.type === "approval_decision").length, 1, "delivered once");
    });

    await t.step("approval_resolved marks it applied", async () => {
      const decision = a.frames.find((f) => f.type === "approval_decision")!;
      a.send("approval_resolved", {
        approvalId: "r1",
        decision: decision.decision,
        by: "admin",
        source: "web",
      });
      const applied = await waitApproval(d, "ap1", "r1", (x) => x.appliedAt !== null);
      assert.equal(applied.source, "web");
    });

    await t.step("bad bodies and ids", async () => {
      const cases: [string, string, number][] = [
        ["/api/approvals/r1", JSON.stringify({ decision: "maybe" }), 400],
        ["/api/approvals/nope", JSON.stringify({ decision: "approve" }), 404],
        ["/api/approvals/r1", "{", 400],
      ];
      for (const [path, body, status] of cases) {
        const res = await d.api(path, { method: "POST", body });
        assert.equal(res.status, status, `${path} ${body}`);
        assert.equal(typeof (await res.json()).error, "string");
      }
      const badState = await d.api("/api/approvals?state=soon");
      assert.equal(badState.status, 400);
      await badState.body?.cancel();
    });

    await t.step("PUT policy reaches the plugin live and is listed", async () => {
      const res = await d.api("/api/sessions/ap1/policy", {
        method: "PUT",
        body: JSON.stringify({ ask: "all" }),
      });
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { ask: "all" });
      const frame = await a.waitFrame((f) => f.type === "policy", "policy frame");
      assert.equal(frame.ask, "all");
      const bad = await d.api("/api/sessions/ap1/policy", {
        method: "PUT",
        body: JSON.stringify({ ask: "x" }),
      });
      assert.equal(bad.status, 400);
      await bad.body?.cancel();
      const ghost = await d.api("/api/sessions/ghost/policy", {
        method: "PUT",
        body: JSON.stringify({ ask: [] }),
      });
      assert.equal(ghost.status, 404);
      await ghost.body?.cancel();
    });
  } finally {
    await browser.close();
    await a.close();
  }
});

Deno.test("approvals: a SIGKILLed daemon keeps the pending request; a decision taken offline reaches the reconnecting plugin", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "lvmh-approvals-" });
  try {
    // A process of its own: only a real SIGKILL proves nothing waits in memory. `await using` ends it on a
    // failed assertion; after the kill, `stop()` only reaps it.
    await using d1 = await startDaemon({ dataDir });
    const a1 = await connectAgent(d1, { sessionId: "ap2" });
    const seq = a1.send("approval_request", request("r2"));
    await a1.waitFrame((f) => f.type === "ack" && (f.lastSeq as number) >= seq, "ack of the request");
    await d1.kill("SIGKILL");
    await d1.stop();

    // Reopened in-process (the same createDaemon as main.ts) on what the killed process left on disk.
    await using d2 = await startInProcess({ dataDir });
    const pending = await (await d2.api("/api/approvals?state=pending")).json();
    assert.deepEqual(pending.map((p: { id: string }) => p.id), ["r2"], "still pending after SIGKILL");
    // Decided while the plugin is away: stored, delivered on its reconnect.
    const res = await d2.api("/api/approvals/r2", {
      method: "POST",
      body: JSON.stringify({ decision: "approve", reason: "looks fine" }),
    });
    assert.equal(res.status, 200);
    assert.equal((await res.json()).state, "approved");

    const a2 = await connectAgent(d2, { sessionId: "ap2", nextSeq: seq + 1 });
    try {
      // The plugin re-sends what it still waits on, same approvalId and seq; the daemon answers at once.
      a2.socket.send(
        JSON.stringify({
          v: 1,
          sessionId: "ap2",
          seq,
          ts: Date.now(),
          type: "approval_request",
          ...request("r2"),
        }),
      );
      const decision: Frame = await a2.waitFrame(
        (f) => f.type === "approval_decision",
        "decision on reconnect",
      );
      assert.deepEqual(
        [decision.approvalId, decision.decision, decision.reason, decision.by],
        ["r2", "approve", "looks fine", "bootstrap"],
      );
      const events = await (await d2.api("/api/sessions/ap2/events")).json();
      assert.equal(
        events.filter((e: Frame) => e.type === "approval_request").length,
        1,
        "the log holds it once",
      );
      assert.equal(events[0].v, 1, "events carry the whole envelope");
    } finally {
      await a2.close();
    }
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("approvals: bye cancels what still waits; batch frames are stored event by event", async () => {
  await using d = await startInProcess();
  const a = await connectAgent(d, { sessionId: "ap3" });
  const base = { v: 1, sessionId: "ap3", ts: Date.now() };
  a.socket.send(JSON.stringify({
    ...base,
    seq: 0,
    type: "batch",
    events: [
      { ...base, seq: 1, type: "agent_start" },
      { ...base, seq: 2, type: "no_such_type" },
      { ...base, seq: 3, type: "approval_request", ...request("r3") },
    ],
  }));
  const error = await a.waitFrame((f) => f.type === "error", "error for the bad event");
  assert.equal(error.seq, 2);
  await a.waitFrame((f) => f.type === "ack" && f.lastSeq === 3, "one ack for the batch");
  const events = await (await d.api("/api/sessions/ap3/events")).json();
  assert.deepEqual(events.map((e: Frame) => e.seq), [1, 3]);
  a.socket.send(JSON.stringify({ ...base, seq: 4, type: "bye", reason: "shutdown" }));
  await waitApproval(d, "ap3", "r3", (x) => x.state === "cancelled");
  a.socket.send(JSON.stringify({ ...base, seq: 0, type: "ping" }));
  await a.waitFrame((f) => f.type === "pong", "pong");
  await a.close();
});

Deno.test("approvals: a new pi on the session (hello.waiting) cancels what the one that died left pending", async () => {
  await using d = await startInProcess({ env: { LVMH_ASK: "bash" } });
  const first = await connectAgent(d, { sessionId: "ap4", hello: { waiting: [] } });
  first.send("approval_request", request("r4"));
  first.send("approval_request", request("r5"));
  await waitApproval(d, "ap4", "r5", (x) => x.state === "pending");
  first.socket.close(); // no bye: the pi died
  await first.closed;
  // An older plugin says nothing about what waits: both stay pending.
  const old = await connectAgent(d, { sessionId: "ap4" });
  await old.close();
  assert.equal((await waitApproval(d, "ap4", "r4", () => true)).state, "pending");
  // A newer pi on the same session that still waits for r5 only (r5 was re-sent after its welcome).
  const next = await connectAgent(d, { sessionId: "ap4", hello: { waiting: ["r5"] } });
  const orphan = await waitApproval(d, "ap4", "r4", (x) => x.state !== "pending");
  assert.deepEqual([orphan.state, orphan.decidedBy], ["cancelled", "pi restarted"]);
  assert.equal((await waitApproval(d, "ap4", "r5", () => true)).state, "pending");
  const sessions = await (await d.api("/api/sessions")).json();
  assert.equal(sessions.find((s: { id: string }) => s.id === "ap4").waiting, 1);
  await next.close();
});

async function waitApproval(
  d: { api(path: string): Promise<Response> },
  sessionId: string,
  id: string,
  pred: (a: Record<string, unknown>) => boolean,
): Promise<Record<string, unknown>> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const list = await (await d.api(`/api/sessions/${sessionId}/approvals`)).json();
    const found = list.find((x: { id: string }) => x.id === id);
    if (found && pred(found)) return found;
    if (Date.now() > deadline) throw new Error(`approval ${id} never matched: ${JSON.stringify(found)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The fields issue 9 names for a REST approval, plus `source` (where the applied answer came from). */
const FIELDS = [
  "id",
  "sessionId",
  "toolCallId",
  "toolName",
  "args",
  "state",
  "createdAt",
  "decidedBy",
  "decidedAt",
  "reason",
  "appliedAt",
  "source",
].sort();

Deno.test("approvals: REST records have the issue's fields, oldest first; a browser that connects gets what waits", async () => {
  await using d = await startInProcess({ env: { LVMH_ASK: "bash" } });
  const a = await connectAgent(d, { sessionId: "ap5" });
  const other = await connectAgent(d, { sessionId: "ap6" });
  try {
    // Sent out of order of their own times: the lists order by the request's time, not by arrival.
    const now = Date.now();
    a.send("approval_request", { ...request("late"), ts: now });
    other.send("approval_request", { ...request("early"), ts: now - 5_000 });
    a.send("approval_request", { ...request("middle"), ts: now - 1_000 });
    await waitApproval(d, "ap5", "middle", (x) => x.state === "pending");
    await waitApproval(d, "ap6", "early", (x) => x.state === "pending");
    const all = await (await d.api("/api/approvals?state=pending")).json();
    assert.deepEqual(all.map((x: { id: string }) => x.id), ["early", "middle", "late"]);
    for (const x of all) assert.deepEqual(Object.keys(x).sort(), FIELDS);
    assert.deepEqual(
      [all[0].sessionId, all[0].toolCallId, all[0].toolName, all[0].createdAt],
      ["ap6", "call-early", "bash", now - 5_000],
    );
    assert.deepEqual([all[0].decidedBy, all[0].decidedAt, all[0].reason, all[0].appliedAt], [
      null,
      null,
      null,
      null,
    ]);
    const mine = await (await d.api("/api/sessions/ap5/approvals")).json();
    assert.deepEqual(
      mine.map((x: { id: string }) => x.id),
      ["middle", "late"],
      "one session's, oldest first",
    );

    // A page opened now learns at once what waits (the frame on connect, before any change).
    const browser = await connectBrowser(d.browserUrl);
    try {
      const first = await browser.waitFrame((f) => f.type === "approvals", "approvals frame on connect");
      assert.deepEqual((first.pending as { id: string }[]).map((p) => p.id), ["early", "middle", "late"]);
      assert.deepEqual(Object.keys((first.pending as object[])[0]).sort(), FIELDS);
    } finally {
      await browser.close();
    }

    for (
      const [path, status] of [["/api/sessions/ghost/approvals", 404], [
        "/api/sessions/ap5/approvals?state=x",
        400,
      ]] as const
    ) {
      const res = await d.api(path);
      assert.equal(res.status, status, path);
      assert.equal(typeof (await res.json()).error, "string");
    }
  } finally {
    await other.close();
    await a.close();
  }
});

Deno.test("approvals: a session's own ask set replaces LVMH_ASK, [] included, across reconnects and restarts", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "lvmh-approvals-" });
  try {
    const env = { LVMH_ASK: "bash,edit" };
    // `await using` stops it if an assertion fails first; `stop()` below is the restart, and idempotent.
    await using d1 = await startInProcess({ dataDir, env });
    const a1 = await connectAgent(d1, { sessionId: "ap7" });
    const b1 = await connectAgent(d1, { sessionId: "ap8" });
    assert.deepEqual(a1.welcome.policy, { ask: ["bash", "edit"] }, "the LVMH_ASK default");
    const res = await d1.api("/api/sessions/ap7/policy", {
      method: "PUT",
      body: JSON.stringify({ ask: [] }),
    });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { ask: [] });
    assert.deepEqual((await a1.waitFrame((f) => f.type === "policy", "policy frame")).ask, []);
    await a1.close();
    await b1.close();
    await d1.stop();

    await using d2 = await startInProcess({ dataDir, env });
    const a2 = await connectAgent(d2, { sessionId: "ap7" });
    const b2 = await connectAgent(d2, { sessionId: "ap8" });
    try {
      assert.deepEqual(
        a2.welcome.policy,
        { ask: [] },
        "asks for nothing: its own set, kept over the restart",
      );
      assert.deepEqual(b2.welcome.policy, { ask: ["bash", "edit"] }, "another session keeps the default");
      const rows = await (await d2.api("/api/sessions")).json();
      const ask = Object.fromEntries(rows.map((s: { id: string; ask: unknown }) => [s.id, s.ask]));
      assert.deepEqual([ask.ap7, ask.ap8], [[], ["bash", "edit"]]);
    } finally {
      await b2.close();
      await a2.close();
    }
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("approvals: LVMH_ASK is unset = none; LVMH_SPAWN_ASK defaults to bash,edit,write, none and all as named", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "lvmh-approvals-" });
  try {
    const base = { LVMH_TOKEN: "test-token-0123456789abcdef", LVMH_DATA_DIR: dataDir };
    const unset = loadConfig(base);
    assert.deepEqual([unset.localAsk, unset.spawnAsk], [[], ["bash", "edit", "write"]]);
    const set = (LVMH_ASK: string, LVMH_SPAWN_ASK: string) => {
      const c = loadConfig({ ...base, LVMH_ASK, LVMH_SPAWN_ASK });
      return [c.localAsk, c.spawnAsk];
    };
    assert.deepEqual(set("all", "none"), ["all", []]);
    assert.deepEqual(set(" Bash, write ,bash", "ALL"), [["bash", "write"], "all"]);
    for (const bad of ["rm -rf", "bash;ls"]) {
      assert.throws(() => loadConfig({ ...base, LVMH_SPAWN_ASK: bad }), ConfigError, bad);
    }
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
  // And the daemon without LVMH_ASK asks a local session for nothing.
  await using d = await startInProcess();
  const a = await connectAgent(d, { sessionId: "ap9" });
  assert.deepEqual(a.welcome.policy, { ask: [] });
  await a.close();
});
