import assert from "node:assert/strict";
import { Hub } from "../hub.ts";
import type { SessionSummary } from "../protocol.ts";
import type { NotifyEvent } from "./kinds.ts";
import { Watcher } from "./watcher.ts";

function row(id: string, extra: Partial<SessionSummary> = {}): SessionSummary {
  return {
    id,
    name: `name ${id}`,
    cwd: "/",
    model: null,
    provider: null,
    agent: false,
    repo: null,
    startedAt: 0,
    state: "idle",
    lastSeq: 0,
    lastEventAt: null,
    online: true,
    ask: [],
    waiting: 0,
    title: `name ${id}`,
    activity: { state: "idle" },
    cost: 0,
    lastActivityAt: null,
    ...extra,
  };
}

let seq = 0;
function publish(hub: Hub, sessionId: string, ...events: Record<string, unknown>[]) {
  hub.publishEvents(
    sessionId,
    seq,
    events.map((e) => ({ seq: ++seq, json: JSON.stringify({ sessionId, seq, ts: 0, ...e }) })),
  );
}

function setup() {
  const hub = new Hub();
  const got: NotifyEvent[] = [];
  const watcher = new Watcher(hub, (e) => got.push(e), { stallMs: 60_000, checkEveryMs: 3_600_000 });
  watcher.prime([], []);
  const update = (...sessions: SessionSummary[]) =>
    hub.broadcast({ type: "session_update", sessions, removed: [] });
  return { hub, got, watcher, update, kinds: () => got.map((e) => `${e.type}:${e.sessionId}`) };
}

Deno.test("Watcher turns run ends into run.settled or run.failed with the reason, linked to that moment", () => {
  const { hub, got, watcher, update, kinds } = setup();
  try {
    update(row("a"));
    publish(hub, "a", { type: "agent_start" }, { type: "agent_end" });
    assert.deepEqual(kinds(), ["run.settled:a"]);
    assert.equal(got[0].data.sessionName, "name a");
    const end = seq;
    assert.deepEqual(
      [got[0].data.seq, got[0].data.path],
      [end, `/sessions/a?at=${end}`],
      "a click opens the run's end",
    );
    publish(hub, "a", { type: "agent_start" }, {
      type: "message_end",
      message: { role: "assistant", id: "m", stopReason: "error", errorMessage: "rate limited" },
    }, { type: "agent_end" });
    assert.deepEqual(kinds(), ["run.settled:a", "run.failed:a"]);
    assert.equal(got[1].data.reason, "rate limited");
    publish(hub, "a", { type: "message_update", delta: "x" });
    assert.equal(got.length, 2, "streaming deltas are not events");
  } finally {
    watcher.close();
  }
});

Deno.test("Watcher reports a session that drops without bye, not one that says goodbye", () => {
  const { hub, watcher, update, kinds } = setup();
  try {
    update(row("a"), row("b"));
    publish(hub, "b", { type: "bye", reason: "shutdown" });
    update(row("a", { online: false }), row("b", { online: false }));
    assert.deepEqual(kinds(), ["session.lost:a"]);
    update(row("b"));
    update(row("b", { online: false }));
    assert.deepEqual(kinds(), ["session.lost:a", "session.lost:b"], "a bye counts for one link only");
  } finally {
    watcher.close();
  }
});

Deno.test("Watcher announces each new approval and each failed spawn once", () => {
  const { hub, watcher, update, kinds, got } = setup();
  try {
    update(row("a"));
    const approval = {
      id: "p1",
      sessionId: "a",
      toolCallId: "c",
      toolName: "bash",
      args: { command: "ls" },
      state: "pending" as const,
      createdAt: 0,
      decidedBy: null,
      decidedAt: null,
      reason: null,
      appliedAt: null,
    };
    hub.broadcast({ type: "approvals", pending: [approval] });
    hub.broadcast({ type: "approvals", pending: [approval] });
    assert.deepEqual(kinds(), ["approval.requested:a"]);
    assert.equal(got[0].data.path, "/sessions/a#approval-p1");
    const job = {
      id: "j1",
      repo: "g/p",
      branch: null,
      state: "failed" as const,
      sessionId: "s-new",
      containerId: null,
      error: "clone failed",
      createdAt: 0,
      updatedAt: 0,
    };
    hub.broadcast({ type: "spawn_status", jobs: [job] });
    hub.broadcast({ type: "spawn_status", jobs: [job] });
    assert.deepEqual(kinds(), ["approval.requested:a", "spawn.failed:s-new"]);
    assert.equal(got[1].data.error, "clone failed");
  } finally {
    watcher.close();
  }
});

Deno.test("Watcher.checkStalls() reports a quiet running session once per quiet spell", () => {
  const { watcher, update, kinds } = setup();
  try {
    update(
      row("a", { state: "running", lastEventAt: 1_000 }),
      row("b", { state: "idle", lastEventAt: 1_000 }),
    );
    watcher.checkStalls(30_000);
    assert.deepEqual(kinds(), [], "not quiet long enough");
    watcher.checkStalls(61_001);
    watcher.checkStalls(90_000);
    assert.deepEqual(kinds(), ["session.stalled:a"], "once, and never for an idle session");
    update(row("a", { state: "running", lastEventAt: 95_000 }));
    watcher.checkStalls(200_000);
    assert.deepEqual(kinds(), ["session.stalled:a", "session.stalled:a"], "again after new events");
  } finally {
    watcher.close();
  }
});

Deno.test("Watcher with replicas: only the replica holding a session announces what its plugin did", () => {
  const hub = new Hub();
  const got: NotifyEvent[] = [];
  const held = new Set(["mine"]);
  const watcher = new Watcher(hub, (e) => got.push(e), {
    stallMs: 60_000,
    checkEveryMs: 3_600_000,
    holds: (id) => held.has(id),
  });
  const kinds = () => got.map((e) => `${e.type}:${e.sessionId}`);
  const update = (...sessions: SessionSummary[]) =>
    hub.broadcast({ type: "session_update", sessions, removed: [] });
  try {
    watcher.prime([], []);
    update(
      row("mine", { state: "running", lastEventAt: 0 }),
      row("theirs", { state: "running", lastEventAt: 0 }),
    );
    publish(hub, "mine", { type: "agent_start" }, { type: "agent_end" });
    publish(hub, "theirs", { type: "agent_start" }, { type: "agent_end" });
    const approval = (id: string, sessionId: string) => ({
      id,
      sessionId,
      toolName: "bash",
      args: {},
      toolCallId: `c-${id}`,
      state: "pending" as const,
      createdAt: 0,
      decidedBy: null,
      decidedAt: null,
      reason: null,
      appliedAt: null,
    });
    hub.broadcast({ type: "approvals", pending: [approval("p1", "mine"), approval("p2", "theirs")] });
    watcher.checkStalls(120_000);
    assert.deepEqual(kinds(), ["run.settled:mine", "approval.requested:mine", "session.stalled:mine"]);
    assert.equal(got[1].key, "approval.requested:mine:p1", "an approval's id names it on every replica");
    assert.equal(got[0].key, undefined);

    // Both drop without bye: only the replica that held "mine" says it is lost; "theirs" was held elsewhere.
    held.clear();
    update(row("mine", { online: false }), row("theirs", { online: false }));
    assert.deepEqual(kinds().slice(3), ["session.lost:mine"]);
    // The spawn job is this replica's own (its frames reach this hub only): announced whoever holds the session.
    hub.broadcast({
      type: "spawn_status",
      jobs: [{
        id: "j1",
        sessionId: "theirs",
        repo: "g/r",
        branch: null,
        state: "failed" as const,
        containerId: null,
        error: "no",
        createdAt: 0,
        updatedAt: 0,
      }],
    });
    assert.deepEqual(kinds().slice(4), ["spawn.failed:theirs"]);
  } finally {
    watcher.close();
  }
});
