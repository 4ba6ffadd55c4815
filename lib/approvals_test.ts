import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { Approvals } from "./approvals.ts";
import { ApprovalStore } from "./approval_store.ts";
import type { Command } from "./sessions.ts";
import type { ServerFrame } from "./protocol.ts";
import { ConflictError, NotFoundError } from "./errors.ts";

const request = (approvalId: string, sessionId = "s1") => ({
  sessionId,
  ts: Date.now(),
  approvalId,
  toolCallId: `call-${approvalId}`,
  toolName: "bash",
  args: { command: "echo hi" },
});

/** Approvals over a real SQLite file, with a plugin that is online when `online` says so. */
async function withApprovals(
  fn: (t: {
    approvals: Approvals;
    sent: Command[];
    frames: ServerFrame[];
    setOnline(v: boolean): void;
    reopen(): Approvals;
  }) => void,
) {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-approvals-" });
  const dbs: DatabaseSync[] = [];
  const sent: Command[] = [];
  const frames: ServerFrame[] = [];
  let online = true;
  const open = () => {
    const db = new DatabaseSync(`${dir}/lvmh.db`);
    dbs.push(db);
    return new Approvals(new ApprovalStore(db), {
      trySend: (_id, c) => online && sent.push(c) > 0,
      touch() {},
      broadcast: (f) => frames.push(f),
    });
  };
  try {
    fn({ approvals: open(), sent, frames, setOnline: (v) => online = v, reopen: open });
  } finally {
    for (const db of dbs) db.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("approvals: a request is pending, listed, counted and broadcast", () =>
  withApprovals(({ approvals, frames }) => {
    approvals.requested(request("a1"));
    assert.equal(approvals.waiting("s1"), 1);
    const [a] = approvals.list({ state: "pending" });
    assert.equal(a.id, "a1");
    assert.equal(a.state, "pending");
    assert.deepEqual(a.args, { command: "echo hi" });
    const last = frames.at(-1)!;
    assert.equal(last.type === "approvals" && last.pending.length, 1);
  }));

Deno.test("approvals: first answer wins; the same again is the same record, the other is 409", () =>
  withApprovals(({ approvals, sent }) => {
    approvals.requested(request("a1"));
    const first = approvals.decide("a1", { decision: "approve" }, "alice");
    assert.equal(first.state, "approved");
    assert.equal(first.decidedBy, "alice");
    assert.deepEqual(approvals.decide("a1", { decision: "approve" }, "bob"), first);
    assert.throws(() => approvals.decide("a1", { decision: "reject" }, "bob"), ConflictError);
    assert.throws(() => approvals.decide("nope", { decision: "reject" }), NotFoundError);
    assert.deepEqual(sent.map((c) => c.type), ["approval_decision"], "delivered once");
    assert.equal(approvals.waiting("s1"), 0);
  }));

Deno.test("approvals: a decision taken offline is delivered when the plugin asks again, and survives a restart", () =>
  withApprovals(({ approvals, sent, setOnline, reopen }) => {
    approvals.requested(request("a1"));
    setOnline(false);
    approvals.decide("a1", { decision: "reject", reason: "not now" }, "alice");
    assert.equal(sent.length, 0);
    setOnline(true);
    const restarted = reopen();
    restarted.requested(request("a1")); // the plugin re-sends it after welcome
    assert.deepEqual(sent, [{
      type: "approval_decision",
      approvalId: "a1",
      decision: "reject",
      reason: "not now",
      by: "alice",
    }]);
    restarted.resolved({ sessionId: "s1", approvalId: "a1", decision: "reject", by: "alice", source: "web" });
    const [a] = restarted.list({ sessionId: "s1" });
    assert.equal(a.state, "rejected");
    assert.ok(a.appliedAt, "delivered to the agent");
  }));

Deno.test("approvals: a pending request survives a restart and stays pending", () =>
  withApprovals(({ approvals, reopen }) => {
    approvals.requested(request("a1"));
    const restarted = reopen();
    assert.equal(restarted.waiting("s1"), 1);
    assert.equal(restarted.list({ state: "pending" })[0].id, "a1");
  }));

Deno.test("approvals: abort cancels, timeout expires, a terminal answer is recorded as it ran", () =>
  withApprovals(({ approvals }) => {
    for (const id of ["ab", "to", "te"]) approvals.requested(request(id));
    approvals.resolved({
      sessionId: "s1",
      approvalId: "ab",
      decision: "reject",
      by: "abort",
      source: "abort",
    });
    approvals.resolved({
      sessionId: "s1",
      approvalId: "to",
      decision: "reject",
      by: "timeout",
      source: "timeout",
    });
    approvals.resolved({
      sessionId: "s1",
      approvalId: "te",
      decision: "approve",
      by: "terminal",
      source: "terminal",
    });
    const states = Object.fromEntries(approvals.list({ sessionId: "s1" }).map((a) => [a.id, a.state]));
    assert.deepEqual(states, { ab: "cancelled", to: "expired", te: "approved" });
    assert.throws(() => approvals.decide("ab", { decision: "approve" }), ConflictError);
  }));

Deno.test("approvals: another session cannot resolve or replay someone else's approval", () =>
  withApprovals(({ approvals, sent }) => {
    approvals.requested(request("a1"));
    approvals.decide("a1", { decision: "approve" }, "alice");
    sent.length = 0;
    approvals.requested(request("a1", "intruder"));
    approvals.resolved({
      sessionId: "intruder",
      approvalId: "a1",
      decision: "reject",
      by: "x",
      source: "web",
    });
    assert.equal(sent.length, 0);
    assert.equal(approvals.list({ sessionId: "s1" })[0].appliedAt, null);
  }));

Deno.test("approvals: a session that ends cancels what still waits in it", () =>
  withApprovals(({ approvals }) => {
    approvals.requested(request("a1"));
    approvals.sessionEnded("s1");
    assert.equal(approvals.waiting("s1"), 0);
    assert.equal(approvals.list({ sessionId: "s1" })[0].state, "cancelled");
  }));

Deno.test("approvals: a hello that no longer waits for a pending approval cancels it; the ones it lists stay", () =>
  withApprovals(({ approvals, reopen }) => {
    approvals.requested(request("a1"));
    approvals.requested(request("a2"));
    approvals.requested(request("b1", "s2"));
    approvals.helloWaiting("s1", ["a2"]);
    assert.equal(approvals.waiting("s1"), 1);
    assert.equal(approvals.waiting("s2"), 1, "another session's approvals are not touched");
    const a1 = approvals.list({ sessionId: "s1" }).find((a) => a.id === "a1")!;
    assert.equal(a1.state, "cancelled");
    assert.equal(a1.decidedBy, "pi restarted");
    assert.deepEqual(
      reopen().list({ state: "pending" }).map((a) => a.id).sort(),
      ["a2", "b1"],
      "kept on disk",
    );
    // A late answer to the orphan is refused instead of being stored for a pi that will never ask again.
    assert.throws(() => approvals.decide("a1", { decision: "approve" }), ConflictError);
  }));
