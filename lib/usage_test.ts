import assert from "node:assert/strict";
import { Store } from "./store.ts";
import { groupRuns, runsIn, USAGE_BY } from "./usage.ts";
import { UsageRuns } from "./usage_runs.ts";
import type { AgentEvent, SessionInfo } from "./protocol.ts";
import { sessionInfo } from "../testing/agent.ts";

const DAY = 86_400_000;

/** A log of runs over a few days: prompts by people or the terminal, usage on messages or only on agent_end. */
function* log(sessionId: string, runs: number, t0: number, seed: number): Generator<AgentEvent> {
  let seq = 1;
  const ev = (type: string, payload: Record<string, unknown>, ts: number) =>
    ({ v: 1, sessionId, seq: seq++, ts, type, ...payload }) as unknown as AgentEvent;
  // Events before any run are no run's.
  yield ev("message_end", { message: { role: "assistant", id: "x", usage: { inputTokens: 9 } } }, t0);
  for (let r = 0; r < runs; r++) {
    const ts = t0 + Math.floor((r * DAY) / 3);
    const old = (r + seed) % 4 === 0; // a plugin that predates usage on messages
    yield ev("agent_start", {}, ts);
    yield ev("message_end", {
      message: { role: "user", id: `u${r}`, text: "go" },
      ...((r + seed) % 3 ? { from: { by: (r + seed) % 2 ? "alice" : "bob" } } : {}),
    }, ts);
    if (!old) {
      yield ev("message_end", {
        message: {
          role: "assistant",
          id: `a${r}`,
          model: r % 2 ? "m-large" : "m-small",
          usage: { inputTokens: 100 + r, outputTokens: 10, totalCost: 0.01 * (r + 1) },
        },
      }, ts + 1);
      yield ev("message_end", { message: { role: "toolResult", id: `t${r}`, text: "ok" } }, ts + 2);
      yield ev("message_end", {
        message: {
          role: "assistant",
          id: `b${r}`,
          usage: { inputTokens: 50, outputTokens: 5, totalCost: 0.005 },
        },
      }, ts + 3);
    }
    // The last run of a session may still be going.
    if (r < runs - 1 || seed % 2) {
      yield ev("agent_end", { usage: { inputTokens: 7, outputTokens: 3, totalCost: 0.5 } }, ts + 4);
    }
  }
}

function same(store: Store, usage: UsageRuns, from: number, to: number): void {
  const sessions = store.listSessions();
  for (const by of USAGE_BY) {
    assert.deepEqual(
      groupRuns(usage.runs(sessions, from, to), by),
      groupRuns(runsIn(store.db, sessions, from, to), by),
      `by ${by}`,
    );
  }
}

Deno.test("UsageRuns: the table tells what the log tells, in small commits, after a crash and a reopen", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-usage-runs-" });
  const path = `${dir}/lvmh.db`;
  const t0 = Date.parse("2026-03-01T10:00:00Z");
  try {
    let store = new Store(path, { search: false });
    let usage = new UsageRuns(store.db);
    const events: AgentEvent[][] = [];
    for (let i = 0; i < 4; i++) {
      const id = `s${i}`;
      store.upsertSession(sessionInfo(id, { repo: `team/r${i % 2}`, model: "m-default" }) as SessionInfo);
      events.push([...log(id, 7, t0 + i * 3_600_000, i)]);
    }
    // Commits of 3 events cut runs anywhere; s3 is stored but never told to the table (a crash after it).
    for (const [i, evs] of events.entries()) {
      for (let k = 0; k < evs.length; k += 3) {
        const commits = store.appendBatch(evs.slice(k, k + 3));
        if (i !== 3) usage.committed(commits);
      }
    }
    const runs = usage.runs(store.listSessions(), t0, t0 + 10 * DAY);
    assert.equal(runs.length, 28, "every run, s3's read when asked");
    same(store, usage, t0, t0 + 10 * DAY);
    same(store, usage, t0 + DAY, t0 + 2 * DAY);
    assert.ok(groupRuns(runs, "person").some((r) => r.key === "terminal"));
    assert.ok(groupRuns(runs, "model").some((r) => r.key === "m-default"), "a run without a message model");

    // Reopened, more is stored before the table hears of it: the backfill reads it.
    usage.close();
    store.close();
    store = new Store(path, { search: false });
    usage = new UsageRuns(store.db);
    store.appendBatch([...log("s0", 9, t0, 0)].slice(events[0].length));
    const seen = store.db.prepare("SELECT MAX(seenSeq) AS seq FROM usage_runs WHERE sessionId = 's0'")
      .get() as {
        seq: number;
      };
    assert.ok(seen.seq < store.lastSeq("s0"));
    usage.backfill(() => store.listSessions());
    const deadline = Date.now() + 5000;
    while (
      (store.db.prepare("SELECT MAX(seenSeq) AS seq FROM usage_runs WHERE sessionId = 's0'").get() as {
        seq: number;
      }).seq <
        store.lastSeq("s0") - 1
    ) {
      assert.ok(Date.now() < deadline, "backfilled");
      await new Promise((r) => setTimeout(r, 5));
    }
    same(store, usage, t0, t0 + 10 * DAY);

    // A deleted session's runs go; one made again under its id starts from nothing.
    store.deleteSession("s1");
    usage.sessionDeleted("s1");
    store.upsertSession(sessionInfo("s1") as SessionInfo);
    store.appendBatch([...log("s1", 1, t0, 1)]);
    same(store, usage, t0, t0 + 10 * DAY);
    assert.equal(
      usage.runs(store.listSessions(), t0, t0 + 10 * DAY).filter((r) => r.sessionId === "s1").length,
      1,
    );
    usage.close();
    store.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("UsageRuns: commits are written together on a timer, not one transaction each; reports see them at once", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-usage-timed-" });
  const t0 = Date.parse("2026-03-01T10:00:00Z");
  const store = new Store(`${dir}/lvmh.db`, { search: false });
  const usage = new UsageRuns(store.db);
  const rowsInTable = () =>
    (store.db.prepare("SELECT count(*) AS n FROM usage_runs").get() as { n: number }).n;
  try {
    store.upsertSession(sessionInfo("w") as SessionInfo);
    const events = [...log("w", 6, t0, 1)];
    for (let k = 0; k < events.length; k += 2) usage.committed(store.appendBatch(events.slice(k, k + 2)));
    assert.equal(rowsInTable(), 0, "nothing written per commit");
    const deadline = Date.now() + 5000;
    while (rowsInTable() === 0) {
      assert.ok(Date.now() < deadline, "the timed write came");
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(rowsInTable(), 6, "every run, in one write");
    same(store, usage, t0, t0 + 10 * DAY);

    // Counted but not written yet: a report writes it first.
    store.upsertSession(sessionInfo("v") as SessionInfo);
    usage.committed(store.appendBatch([...log("v", 2, t0, 2)]));
    assert.equal(
      usage.runs(store.listSessions(), t0, t0 + 10 * DAY).filter((r) => r.sessionId === "v").length,
      2,
    );
    assert.equal(rowsInTable(), 8);
  } finally {
    usage.close();
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
});
