import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { Approvals } from "./approvals.ts";
import { SqliteApprovalLog } from "./storage/sqlite_approval_log.ts";
import type { Command } from "./sessions.ts";
import type { ServerFrame } from "./protocol.ts";
import { ConflictError, NotFoundError } from "./errors.ts";
import { waitFor } from "../testing/daemon.ts";

const request = (approvalId: string, sessionId = "s1") => ({
  sessionId,
  ts: Date.now(),
  approvalId,
  toolCallId: `call-${approvalId}`,
  toolName: "bash",
  args: { command: "echo hi" },
});

/** Approvals over a real SQLite file, started as the daemon starts them, with a plugin online when `online` says so. */
async function withApprovals(
  fn: (t: {
    approvals: Approvals;
    sent: Command[];
    frames: ServerFrame[];
    setOnline(v: boolean): void;
    reopen(): Promise<Approvals>;
    /** The SQLite file's path. */
    path: string;
    /** Another owner on the same handle (another part of the one daemon), started. */
    beside(): Promise<{ approvals: Approvals; frames: ServerFrame[] }>;
  }) => Promise<void>,
) {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-approvals-" });
  const dbs: DatabaseSync[] = [];
  const owners: Approvals[] = [];
  const sent: Command[] = [];
  const frames: ServerFrame[] = [];
  let online = true;
  const start = async (db: DatabaseSync, seen: ServerFrame[]) => {
    const approvals = new Approvals(new SqliteApprovalLog(db), {
      trySend: (_id, c) => online && sent.push(c) > 0,
      touch() {},
      broadcast: (f) => seen.push(f),
    });
    owners.push(approvals);
    await approvals.start();
    return approvals;
  };
  const open = () => {
    const db = new DatabaseSync(`${dir}/lvmh.db`);
    dbs.push(db);
    return start(db, frames);
  };
  const beside = async () => {
    const seen: ServerFrame[] = [];
    return { approvals: await start(dbs.at(-1)!, seen), frames: seen };
  };
  try {
    await fn({
      approvals: await open(),
      sent,
      frames,
      setOnline: (v) => online = v,
      reopen: open,
      path: `${dir}/lvmh.db`,
      beside,
    });
  } finally {
    for (const approvals of owners) await approvals.close();
    for (const db of dbs) db.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("approvals: a request is pending, listed, counted and broadcast", () =>
  withApprovals(async ({ approvals, frames }) => {
    await approvals.requested(request("a1"));
    assert.equal(approvals.waiting("s1"), 1);
    const [a] = await approvals.list({ state: "pending" });
    assert.deepEqual(approvals.pending(), [a], "the cache holds the stored record");
    assert.equal(a.id, "a1");
    assert.equal(a.state, "pending");
    assert.deepEqual(a.args, { command: "echo hi" });
    const last = frames.at(-1)!;
    assert.equal(last.type === "approvals" && last.pending.length, 1);
  }));

Deno.test("approvals: first answer wins; the same again is the same record, the other is 409", () =>
  withApprovals(async ({ approvals, sent }) => {
    await approvals.requested(request("a1"));
    const first = await approvals.decide("a1", { decision: "approve" }, "alice");
    assert.equal(first.state, "approved");
    assert.equal(first.decidedBy, "alice");
    assert.deepEqual(await approvals.decide("a1", { decision: "approve" }, "bob"), first);
    await assert.rejects(approvals.decide("a1", { decision: "reject" }, "bob"), ConflictError);
    await assert.rejects(approvals.decide("nope", { decision: "reject" }), NotFoundError);
    assert.deepEqual(sent.map((c) => c.type), ["approval_decision"], "delivered once");
    assert.equal(approvals.waiting("s1"), 0);
  }));

Deno.test("approvals: a decision taken offline is delivered when the plugin asks again, and survives a restart", () =>
  withApprovals(async ({ approvals, sent, setOnline, reopen }) => {
    await approvals.requested(request("a1"));
    setOnline(false);
    await approvals.decide("a1", { decision: "reject", reason: "not now" }, "alice");
    assert.equal(sent.length, 0);
    setOnline(true);
    const restarted = await reopen();
    await restarted.requested(request("a1")); // the plugin re-sends it after welcome
    assert.deepEqual(sent, [{
      type: "approval_decision",
      approvalId: "a1",
      decision: "reject",
      reason: "not now",
      by: "alice",
    }]);
    await restarted.resolved({
      sessionId: "s1",
      approvalId: "a1",
      decision: "reject",
      by: "alice",
      source: "web",
    });
    const [a] = await restarted.list({ sessionId: "s1" });
    assert.equal(a.state, "rejected");
    assert.ok(a.appliedAt, "delivered to the agent");
  }));

Deno.test("approvals: a pending request survives a restart and stays pending", () =>
  withApprovals(async ({ approvals, reopen }) => {
    await approvals.requested(request("a1"));
    const restarted = await reopen();
    assert.equal(restarted.waiting("s1"), 1);
    assert.equal((await restarted.list({ state: "pending" }))[0].id, "a1");
    assert.deepEqual(restarted.pending().map((a) => a.id), ["a1"], "the cache is loaded at start");
  }));

Deno.test("approvals: abort cancels, timeout expires, a terminal answer is recorded as it ran", () =>
  withApprovals(async ({ approvals }) => {
    for (const id of ["ab", "to", "te"]) await approvals.requested(request(id));
    await approvals.resolved({
      sessionId: "s1",
      approvalId: "ab",
      decision: "reject",
      by: "abort",
      source: "abort",
    });
    await approvals.resolved({
      sessionId: "s1",
      approvalId: "to",
      decision: "reject",
      by: "timeout",
      source: "timeout",
    });
    await approvals.resolved({
      sessionId: "s1",
      approvalId: "te",
      decision: "approve",
      by: "terminal",
      source: "terminal",
    });
    const states = Object.fromEntries(
      (await approvals.list({ sessionId: "s1" })).map((a) => [a.id, a.state]),
    );
    assert.deepEqual(states, { ab: "cancelled", to: "expired", te: "approved" });
    await assert.rejects(approvals.decide("ab", { decision: "approve" }), ConflictError);
  }));

Deno.test("approvals: another session cannot resolve or replay someone else's approval", () =>
  withApprovals(async ({ approvals, sent }) => {
    await approvals.requested(request("a1"));
    await approvals.decide("a1", { decision: "approve" }, "alice");
    sent.length = 0;
    await approvals.requested(request("a1", "intruder"));
    await approvals.resolved({
      sessionId: "intruder",
      approvalId: "a1",
      decision: "reject",
      by: "x",
      source: "web",
    });
    assert.equal(sent.length, 0);
    assert.equal((await approvals.list({ sessionId: "s1" }))[0].appliedAt, null);
  }));

Deno.test("approvals: a session that ends cancels what still waits in it", () =>
  withApprovals(async ({ approvals }) => {
    await approvals.requested(request("a1"));
    await approvals.sessionEnded("s1");
    assert.equal(approvals.waiting("s1"), 0);
    assert.equal((await approvals.list({ sessionId: "s1" }))[0].state, "cancelled");
  }));

Deno.test("approvals: a hello that no longer waits for a pending approval cancels it; the ones it lists stay", () =>
  withApprovals(async ({ approvals, reopen }) => {
    await approvals.requested(request("a1"));
    await approvals.requested(request("a2"));
    await approvals.requested(request("b1", "s2"));
    await approvals.helloWaiting("s1", ["a2"]);
    assert.equal(approvals.waiting("s1"), 1);
    assert.equal(approvals.waiting("s2"), 1, "another session's approvals are not touched");
    const a1 = (await approvals.list({ sessionId: "s1" })).find((a) => a.id === "a1")!;
    assert.equal(a1.state, "cancelled");
    assert.equal(a1.decidedBy, "pi restarted");
    assert.deepEqual(
      (await (await reopen()).list({ state: "pending" })).map((a) => a.id).sort(),
      ["a2", "b1"],
      "kept on disk",
    );
    // A late answer to the orphan is refused instead of being stored for a pi that will never ask again.
    await assert.rejects(approvals.decide("a1", { decision: "approve" }), ConflictError);
  }));

Deno.test("approvals: a plugin's steps are stored in the order they came, without waiting for each other", () =>
  withApprovals(async ({ approvals }) => {
    // As agent_conn calls them: one frame after the other, nothing awaited in between.
    const steps = [
      approvals.requested(request("a1")),
      approvals.resolved({
        sessionId: "s1",
        approvalId: "a1",
        decision: "reject",
        by: "abort",
        source: "abort",
      }),
      approvals.requested(request("a2")),
      approvals.helloWaiting("s1", ["a2"]),
      approvals.requested(request("a3")),
    ];
    assert.equal(approvals.waiting("s1"), 0, "nothing is counted before it is stored");
    await Promise.all(steps);
    const states = Object.fromEntries(
      (await approvals.list({ sessionId: "s1" })).map((a) => [a.id, a.state]),
    );
    assert.deepEqual(states, { a1: "cancelled", a2: "pending", a3: "pending" });
    assert.deepEqual(approvals.pending().map((a) => a.id), ["a2", "a3"]);
  }));

Deno.test("approvals: another owner on the file hears of a request and of its answer", () =>
  withApprovals(async ({ approvals, frames, sent, beside }) => {
    const other = await beside();
    await approvals.requested(request("a1"));
    await waitFor(() => other.approvals.waiting("s1") === 1, "the other owner counts the request", 1_000);
    const last = other.frames.at(-1)!;
    assert.deepEqual(last.type === "approvals" && last.pending.map((a) => a.id), ["a1"]);
    await other.approvals.decide("a1", { decision: "approve" }, "bob");
    await waitFor(() => approvals.waiting("s1") === 0, "the first owner hears of the answer", 1_000);
    const mine = frames.at(-1)!;
    assert.deepEqual(mine.type === "approvals" && mine.pending, []);
    assert.equal(sent.length, 1, "the decider delivers the answer, once");
    await assert.rejects(approvals.decide("a1", { decision: "reject" }, "alice"), ConflictError);
  }));

Deno.test("approvals: a request the file refused is stored once it takes writes again, before what followed", () =>
  withApprovals(async ({ approvals, path }) => {
    const locker = new DatabaseSync(path);
    try {
      locker.exec("BEGIN EXCLUSIVE");
      const asked = approvals.requested(request("a1"));
      const answered = approvals.resolved({
        sessionId: "s1",
        approvalId: "a1",
        decision: "reject",
        by: "timeout",
        source: "timeout",
      });
      assert.equal(approvals.waiting("s1"), 0);
      locker.exec("COMMIT");
      await asked;
      await answered;
    } finally {
      locker.close();
    }
    const [a1] = await approvals.list({ sessionId: "s1" });
    assert.equal(a1?.state, "expired", "stored, then answered, in that order");
    assert.equal(approvals.waiting("s1"), 0);
  }));
