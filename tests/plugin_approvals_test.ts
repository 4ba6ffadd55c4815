/**
 * Tool approvals, the plugin's side, in-process: the fake pi host drives the bundled plugin against a
 * loopback fake daemon, which plays the wire contract (welcome.policy, policy, approval_decision).
 */
import assert from "node:assert/strict";
import { waitFor } from "../testing/daemon.ts";
import { fakeDaemon, type Frame, opts, tempHome } from "../testing/plugin_host.ts";

import { call, pending, request, resolved, started } from "../testing/approvals_host.ts";

Deno.test(
  "approvals: a gated call waits for the daemon's decision; others run at once",
  opts,
  async () => {
    await using d = fakeDaemon({ policy: { ask: ["bash"] } });
    await using h = await tempHome();
    const fake = await started(d, h.home, "appr-1");
    // The welcome's policy must be in before the first call; the ack of a first event shows it is.
    await fake.fire("agent_start");
    await d.waitFrame((f) => f.type === "agent_start", "agent_start");
    assert.equal(
      await fake.fire("tool_call", call("r1", "read", { path: "x" })),
      undefined,
      "read is not gated",
    );

    const approved = fake.fire("tool_call", call("c1"));
    const req = await request(d, "c1");
    assert.equal(req.toolName, "bash");
    assert.deepEqual(req.args, { command: "ls" });
    assert.match(String(req.approvalId), /^[0-9a-f-]{36}$/);
    assert.ok(req.seq >= 1);
    assert.equal(await pending(approved), true, "waits");
    d.send({
      type: "approval_decision",
      approvalId: "not-ours",
      decision: "reject",
      by: "x",
    });
    assert.equal(
      await pending(approved),
      true,
      "a decision for another id is ignored",
    );
    d.send({
      type: "approval_decision",
      approvalId: req.approvalId,
      decision: "approve",
      by: "alice",
    });
    assert.equal(await approved, undefined, "approve: the tool runs");
    const res = await resolved(d, req.approvalId);
    assert.deepEqual([res.decision, res.by, res.source], [
      "approve",
      "alice",
      "web",
    ]);
    assert.ok(res.seq > req.seq);

    const rejected = fake.fire("tool_call", call("c2"));
    const req2 = await request(d, "c2");
    d.send({
      type: "approval_decision",
      approvalId: req2.approvalId,
      decision: "reject",
      reason: "no",
      by: "bob",
    });
    d.send({
      type: "approval_decision",
      approvalId: req2.approvalId,
      decision: "approve",
      by: "late",
    });
    assert.deepEqual(await rejected, {
      block: true,
      reason: "Rejected by bob: no",
    });
    const res2 = await resolved(d, req2.approvalId);
    assert.deepEqual([res2.decision, res2.by, res2.source], [
      "reject",
      "bob",
      "web",
    ]);

    const bare = fake.fire("tool_call", call("c3"));
    const req3 = await request(d, "c3");
    d.send({
      type: "approval_decision",
      approvalId: req3.approvalId,
      decision: "reject",
      by: "bob",
    });
    assert.deepEqual(await bare, { block: true, reason: "Rejected by bob" });
    await resolved(d, req3.approvalId);
    assert.equal(
      d.frames.filter((f) => f.type === "approval_resolved").length,
      3,
      "the late answer did nothing",
    );
    await fake.fire("session_shutdown", { reason: "quit" });
  },
);

Deno.test(
  "approvals: LVMH_ASK adds to the daemon's set, and a policy frame replaces the daemon's",
  opts,
  async () => {
    await using d = fakeDaemon(); // an older daemon: no policy
    await using h = await tempHome();
    const fake = await started(d, h.home, "appr-2", { LVMH_ASK: "write" });
    assert.equal(
      await fake.fire("tool_call", call("b1")),
      undefined,
      "no asking from the daemon",
    );
    const w = fake.fire(
      "tool_call",
      call("w1", "write", { path: "a", content: "b" }),
    );
    const req = await request(d, "w1");
    d.send({
      type: "approval_decision",
      approvalId: req.approvalId,
      decision: "approve",
      by: "a",
    });
    assert.equal(await w, undefined);

    d.send({ type: "policy", ask: "all" });
    await waitFor(async () => {
      const p = fake.fire("tool_call", call(`probe-${Date.now()}`, "grep", {}));
      const gated = await pending(p);
      if (gated) {
        const r = d.frames.findLast((f: Frame) => f.type === "approval_request")!;
        d.send({
          type: "approval_decision",
          approvalId: r.approvalId,
          decision: "approve",
          by: "a",
        });
        await p;
      }
      return gated;
    }, "policy all applied");
    d.send({ type: "policy", ask: [] });
    const w2 = fake.fire("tool_call", call("w2", "write", {}));
    await request(d, "w2"); // the daemon cannot take LVMH_ASK's tools away
    await fake.fire("session_shutdown", { reason: "quit" });
    assert.deepEqual(
      await w2,
      { block: true, reason: "Rejected by abort" },
      "shutdown ends the wait",
    );
  },
);

Deno.test(
  "approvals: pi's abort ends the wait, blocked and resolved as abort",
  opts,
  async () => {
    await using d = fakeDaemon({ policy: { ask: "all" } });
    await using h = await tempHome();
    const fake = await started(d, h.home, "appr-3");
    await fake.fire("agent_start");
    await d.waitFrame((f) => f.type === "agent_start", "agent_start");
    const ac = new AbortController();
    fake.ctx.signal = ac.signal;
    const p = fake.fire("tool_call", call("a1"));
    const req = await request(d, "a1");
    ac.abort();
    assert.deepEqual(await p, { block: true, reason: "Rejected by abort" });
    const res = await resolved(d, req.approvalId);
    assert.deepEqual([res.decision, res.by, res.source], [
      "reject",
      "abort",
      "abort",
    ]);
    // A call that comes after the abort (pi preflights the rest of the message) is not left waiting either.
    assert.deepEqual(await fake.fire("tool_call", call("a2")), {
      block: true,
      reason: "Rejected by abort",
    });
    await fake.fire("session_shutdown", { reason: "quit" });
  },
);

Deno.test(
  "approvals: a request survives a reconnect, re-sent with the same approvalId and seq",
  opts,
  async () => {
    await using d = fakeDaemon({ policy: { ask: ["bash"] } });
    await using h = await tempHome();
    const fake = await started(d, h.home, "appr-4");
    await fake.fire("agent_start");
    await d.waitFrame((f) => f.type === "agent_start", "agent_start");
    const p = fake.fire("tool_call", call("k1"));
    const req = await request(d, "k1");
    // Acked (the fake acks every event), then the socket goes.
    await waitFor(
      () => d.frames.filter((f) => f.type === "approval_request").length === 1,
      "one request",
    );
    d.drop();
    await waitFor(() => d.hellos() === 2, "reconnected", 15_000);
    const again = await waitFor(
      () => d.frames.filter((f) => f.type === "approval_request" && f.approvalId === req.approvalId)[1],
      "request re-sent",
    );
    assert.equal(
      again.seq,
      req.seq,
      "same seq: the daemon's log holds it once",
    );
    // Each hello says what this pi still waits for, so a daemon can drop what an earlier pi left behind.
    const hellos = d.frames.filter((f) => f.type === "hello");
    assert.deepEqual(hellos.map((f) => f.waiting), [[], [req.approvalId]]);
    assert.equal(await pending(p), true, "still waiting");
    d.send({
      type: "approval_decision",
      approvalId: req.approvalId,
      decision: "approve",
      by: "carol",
    });
    assert.equal(await p, undefined);
    await resolved(d, req.approvalId);
    await fake.fire("session_shutdown", { reason: "quit" });
  },
);

Deno.test(
  "approvals: LVMH_ASK_TIMEOUT rejects on the clock; without it nothing does",
  opts,
  async () => {
    await using d = fakeDaemon({ policy: { ask: ["bash"] } });
    await using h = await tempHome();
    const fake = await started(d, h.home, "appr-5", {
      LVMH_ASK_TIMEOUT: "0.2",
    });
    await fake.fire("agent_start");
    await d.waitFrame((f) => f.type === "agent_start", "agent_start");
    const p = fake.fire("tool_call", call("t1"));
    const req = await request(d, "t1");
    assert.deepEqual(await p, { block: true, reason: "Rejected by timeout" });
    const res = await resolved(d, req.approvalId);
    assert.deepEqual([res.decision, res.by, res.source], [
      "reject",
      "timeout",
      "timeout",
    ]);
    await fake.fire("session_shutdown", { reason: "quit" });
  },
);
