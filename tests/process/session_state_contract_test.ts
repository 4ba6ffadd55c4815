/**
 * One contract, two stores, for the per-session state spawning and budgets keep (budgets, working copy
 * records, worker states) and usage runs: every case runs against SQLite (a real file under the daemon's
 * Store) and PostgreSQL (a real server from testing/postgres.ts, a fresh database per case). `a` and `b` are
 * two replicas on one database (on SQLite, two parts of the one daemon on its handle and table owners).
 */
import assert from "node:assert/strict";
import { contractTest, newDatabase, opening } from "../../testing/storage_replicas.ts";
import { type Opened, openPg, openSqlite } from "../../testing/session_state.ts";
import type { RunRow } from "../../lib/storage/usage_run_log.ts";
import { MAX_KEPT_LOG_CHARS } from "../../lib/spawn/containers.ts";

const SHA = "0123456789abcdef0123456789abcdef01234567";
const WORKSPACE = { repo: "g/p", baseBranch: "main", baseSha: SHA, branch: "lvmh/s1" };
const LIMITS = { maxCost: 2, maxTokens: 1000, onReach: "stop" as const };

function run(sessionId: string, startSeq: number, cost: number, open = 0): RunRow {
  return {
    sessionId,
    startSeq,
    startedAt: 1_700_000_000_000 + startSeq,
    person: "alice",
    model: "m",
    inputTokens: 10 * startSeq,
    outputTokens: 5,
    cost,
    counted: 1,
    open,
  };
}

function contract(name: string, open: () => Promise<Opened>) {
  const withStore = opening(open);
  contractTest(`session state contract (${name})`, name, async (t) => {
    await t.step(
      "a budget set on A is read on B; raises on both count each once",
      () =>
        withStore(async (o) => {
          const { a, b } = o;
          assert.equal(await b.state.budget("s1"), null);
          assert.equal(await a.state.raiseBudget("s1", null), false, "no row, no fallback: nothing");
          assert.equal(await b.state.budget("s1"), null);
          await a.state.putBudget("s1", LIMITS, "session");
          assert.deepEqual(await b.state.budget("s1"), {
            sessionId: "s1",
            ...LIMITS,
            raisedCost: 0,
            raisedTokens: 0,
            source: "session",
          });
          assert.deepEqual(await b.state.budgetIds(), ["s1"]);
          // Two replicas approving cards of one session at once: every raise counts.
          const raises = [];
          for (let i = 0; i < 10; i++) {
            raises.push(
              a.state.raiseBudget("s1", null),
              b.state.raiseBudget("s1", { ...LIMITS, source: "spawn" }),
            );
          }
          assert.deepEqual(await Promise.all(raises), Array(20).fill(true));
          const raised = await a.state.budget("s1");
          assert.equal(raised?.raisedCost, 40);
          assert.equal(raised?.raisedTokens, 20_000);
          assert.equal(raised?.source, "session", "a fallback does not replace a row");
          // Setting it afresh forgets the raises.
          await b.state.putBudget("s1", { maxCost: 0.5, maxTokens: null, onReach: "ask" }, "session");
          assert.deepEqual(await a.state.budget("s1"), {
            sessionId: "s1",
            maxCost: 0.5,
            maxTokens: null,
            onReach: "ask",
            raisedCost: 0,
            raisedTokens: 0,
            source: "session",
          });
          await a.state.deleteBudget("s1");
          assert.equal(await b.state.budget("s1"), null);
          assert.deepEqual(await b.state.budgetIds(), []);
        }),
    );

    await t.step(
      "a default budget's raise writes its row first, inside the caller's transaction",
      () =>
        withStore(async (o) => {
          const fallback = {
            maxCost: 1.5,
            maxTokens: null,
            onReach: "ask" as const,
            source: "default" as const,
          };
          await o.inTransaction(o.a.state.raiseBudgetWrites("d", fallback), false);
          assert.equal(await o.b.state.budget("d"), null, "rolled back with the decision");
          await o.inTransaction(o.a.state.raiseBudgetWrites("d", fallback), true);
          assert.deepEqual(await o.b.state.budget("d"), {
            sessionId: "d",
            maxCost: 1.5,
            maxTokens: null,
            onReach: "ask",
            raisedCost: 1.5,
            raisedTokens: 0,
            source: "default",
          });
          assert.equal(await o.b.state.raiseBudget("d", fallback), true);
          assert.equal((await o.a.state.budget("d"))?.raisedCost, 3);
        }),
    );

    await t.step(
      "a working copy recorded on A is read on B; the first record stands",
      () =>
        withStore(async ({ a, b }) => {
          assert.equal(await b.state.workspace("s1"), null);
          await a.state.recordWorkspace("s1", WORKSPACE, 1000);
          await b.state.recordWorkspace("s1", {
            ...WORKSPACE,
            baseSha: "f".repeat(40),
            baseBranch: "dev",
          }, 2000);
          assert.deepEqual(await b.state.workspace("s1"), {
            sessionId: "s1",
            ...WORKSPACE,
            createdAt: 1000,
          });
          await assert.rejects(
            b.state.recordWorkspace("s2", { ...WORKSPACE, baseSha: "main" }),
            /not a sha/,
          );
          await assert.rejects(b.state.recordWorkspace("s2", { ...WORKSPACE, repo: "" }), /empty field/);
          assert.equal(await a.state.workspace("s2"), null);
          await b.state.deleteWorkspace("s1");
          assert.equal(await a.state.workspace("s1"), null);
        }),
    );

    await t.step(
      "a worker's state moves as the daemon moves it, logs and end kept as today",
      () =>
        withStore(async ({ a, b }) => {
          assert.equal(await a.state.setContainer("s1", "g/p", "starting", { from: [null] }), true);
          assert.equal(await b.state.setContainer("s1", "g/p", "starting", { from: [null] }), false);
          assert.equal((await b.state.container("s1"))?.state, "starting");
          assert.equal(await b.state.containerLogs("s1"), null);
          await b.state.setContainer("s1", "g/p", "running");
          const end = { exitCode: 137, reason: "oom" };
          await a.state.setContainer("s1", "g/p", "crashed", { end, logs: "one\ntwo\n" });
          const crashed = await b.state.container("s1");
          assert.deepEqual({ ...crashed, updatedAt: 0 }, {
            sessionId: "s1",
            repo: "g/p",
            state: "crashed",
            exitCode: 137,
            reason: "oom",
            updatedAt: 0,
          });
          assert.equal(await b.state.containerLogs("s1"), "one\ntwo\n");
          // Stopped without logs keeps the kept ones, and drops the crash's end.
          await b.state.setContainer("s1", "g/p", "stopped");
          assert.equal(await a.state.containerLogs("s1"), "one\ntwo\n");
          assert.equal((await a.state.container("s1"))?.exitCode, null);
          // A crash without an end says it is unknown.
          await a.state.setContainer("s1", "g/p", "crashed");
          assert.deepEqual([
            (await b.state.container("s1"))?.exitCode,
            (await b.state.container("s1"))?.reason,
          ], [
            -1,
            "unknown",
          ]);
          // Starting again forgets the earlier worker's logs.
          await a.state.setContainer("s1", "g/p", "starting");
          assert.equal(await b.state.containerLogs("s1"), null);
          // Logs beyond the limit keep their end, cut at a line start.
          const line = "x".repeat(99) + "\n";
          const long = "head\n" + line.repeat(Math.ceil(MAX_KEPT_LOG_CHARS / line.length) + 5);
          await a.state.setContainer("s1", "g/p", "stopped", { logs: long });
          const kept = (await b.state.containerLogs("s1"))!;
          assert.ok(kept.length <= MAX_KEPT_LOG_CHARS && long.endsWith(kept) && kept.startsWith("x"));
          await a.state.setContainer("s2", "g/q", "running");
          assert.deepEqual(
            (await b.state.containers()).map((c) => [c.sessionId, c.repo, c.state]).sort(),
            [
              ["s1", "g/p", "stopped"],
              ["s2", "g/q", "running"],
            ],
          );
          // A running worker is not discarded; a stopped one is, once.
          assert.equal(await b.state.deleteContainer("s2", ["stopped", "crashed"]), false);
          assert.equal(await a.state.deleteContainer("s1", ["stopped", "crashed"]), true);
          assert.equal(await b.state.deleteContainer("s1", ["stopped", "crashed"]), false);
          assert.equal(await b.state.container("s1"), null);
          assert.equal(await b.state.deleteContainer("s2"), true);
          assert.deepEqual(await a.state.containers(), []);
        }),
    );

    await t.step(
      "two replicas moving one worker at once: exactly one acts, every time",
      () =>
        withStore(async ({ a, b }) => {
          const ids = Array.from({ length: 20 }, (_, i) => `w${i}`);
          for (const id of ids) await a.state.setContainer(id, "g/p", "stopped", { logs: "bye\n" });
          // Both resume every session at once (the resume's move from the state each read).
          const results = await Promise.all(
            ids.flatMap((id) =>
              [a, b].map((r) => r.state.setContainer(id, "g/p", "starting", { from: ["stopped"] }))
            ),
          );
          for (let i = 0; i < ids.length; i++) {
            assert.equal(
              Number(results[2 * i]) + Number(results[2 * i + 1]),
              1,
              `${ids[i]}: one resume won`,
            );
          }
          // Both settle after a restart (starting, its worker gone → stopped): one marks each.
          const settled = await Promise.all(
            ids.flatMap((id) =>
              [b, a].map((r) => r.state.setContainer(id, "g/p", "stopped", { from: ["starting"] }))
            ),
          );
          assert.equal(settled.filter(Boolean).length, ids.length);
          for (const c of await b.state.containers()) assert.equal(c.state, "stopped");
        }),
    );

    await t.step(
      "usage runs written on A are read on B; a write counted less far never wins",
      () =>
        withStore(async ({ a, b }) => {
          assert.deepEqual(await b.usage.seen(), new Map());
          assert.equal(await b.usage.seenOf("s1"), null);
          assert.equal(
            await a.usage.put([run("s1", 1, 0.1), run("s1", 5, 0.2, 1)], new Map([["s1", 8]])),
            2,
          );
          assert.equal(await a.usage.put([run("s2", 2, 0.5)], new Map()), 1);
          assert.deepEqual(await b.usage.seen(), new Map([["s1", 8], ["s2", 0]]));
          assert.equal(await b.usage.seenOf("s1"), 8);
          assert.deepEqual(await b.usage.openRun("s1"), run("s1", 5, 0.2, 1));
          assert.equal(await b.usage.openRun("s2"), null);
          // B counted the same run from an older read: it does not go back.
          assert.equal(await b.usage.put([run("s1", 5, 0.05, 1)], new Map([["s1", 6]])), 0);
          assert.equal((await a.usage.openRun("s1"))?.cost, 0.2);
          // Both write at once, counted to different seqs: the one counted further stands.
          await Promise.all([
            a.usage.put([run("s1", 5, 0.9)], new Map([["s1", 20]])),
            b.usage.put([run("s1", 5, 0.3, 1)], new Map([["s1", 12]])),
          ]);
          assert.equal(await b.usage.seenOf("s1"), 20);
          assert.equal(await b.usage.openRun("s1"), null);
          const all = (await b.usage.range(1_700_000_000_000, 1_700_000_000_006)).sort((x, y) =>
            x.startSeq - y.startSeq
          );
          assert.deepEqual(all, [run("s1", 1, 0.1), run("s2", 2, 0.5), run("s1", 5, 0.9)]);
          assert.deepEqual(await a.usage.range(1_700_000_000_002, 1_700_000_000_005), [
            run("s2", 2, 0.5),
          ]);
          await b.usage.deleteSession("s1");
          assert.deepEqual(await a.usage.seen(), new Map([["s2", 0]]));
        }),
    );

    await t.step("every kind survives a close and a reopen", () =>
      withStore(async (o) => {
        await o.a.state.putBudget("s1", LIMITS, "session");
        await o.a.state.raiseBudget("s1", null);
        await o.a.state.recordWorkspace("s1", WORKSPACE, 1000);
        await o.b.state.setContainer("s1", "g/p", "crashed", {
          end: { exitCode: 1, reason: "exit 1" },
          logs: "x\n",
        });
        await o.b.usage.put([run("s1", 3, 0.25, 1)], new Map([["s1", 4]]));
        await o.reopen();
        assert.equal((await o.b.state.budget("s1"))?.raisedCost, 2);
        assert.deepEqual(await o.b.state.budgetIds(), ["s1"]);
        assert.equal((await o.b.state.workspace("s1"))?.baseSha, SHA);
        assert.equal((await o.a.state.container("s1"))?.reason, "exit 1");
        assert.equal(await o.a.state.containerLogs("s1"), "x\n");
        assert.deepEqual(await o.a.usage.openRun("s1"), run("s1", 3, 0.25, 1));
        assert.equal(await o.a.usage.seenOf("s1"), 4);
      }));
  });
}

contract("sqlite", openSqlite);
contract("postgres", async () => openPg(await newDatabase()));
