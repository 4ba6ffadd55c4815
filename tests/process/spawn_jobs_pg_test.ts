/**
 * lib/spawn/shared_jobs.ts over lib/storage/pg_spawn_job_log.ts on a real PostgreSQL database, two lists
 * standing for replicas r0 and r1: a write older than the row is refused; r0's jobs reach r1's list (and its
 * `publish`) within a read; r0's job in progress is failed on r1 while r0's heartbeat is gone, and as it is
 * again once r0 beats; a worker r1 found again by label is hidden behind r0's spawned job; r0 restarted takes
 * back its rows (the one in progress failed); the leader's prune bounds the table.
 */
import assert from "node:assert/strict";
import { newDatabase, postgresTest } from "../../testing/storage_replicas.ts";
import { waitFor } from "../../testing/daemon.ts";
import { openMigrated } from "../../lib/storage/pg_migrate.ts";
import { PgSpawnJobLog } from "../../lib/storage/pg_spawn_job_log.ts";
import { PgReplicas } from "../../lib/storage/pg_replicas.ts";
import { SharedSpawnJobs } from "../../lib/spawn/shared_jobs.ts";
import { MAX_JOBS } from "../../lib/spawn/jobs.ts";
import type { SpawnJob } from "../../lib/protocol.ts";

const job = (id: string, sessionId: string, state: SpawnJob["state"], at: number): SpawnJob => ({
  id,
  repo: "g/p",
  branch: "feature/x",
  state,
  sessionId,
  containerId: null,
  error: null,
  createdAt: at,
  updatedAt: at,
});

postgresTest(
  "shared spawn jobs: rows per job, other replicas' copies, stopped replicas, prune",
  async (t) => {
    const sql = await openMigrated(await newDatabase(), { max: 4 });
    const log = new PgSpawnJobLog(sql);
    const replicas = new PgReplicas(sql);
    const lists: SharedSpawnJobs[] = [];
    const open = (id: string, published: SpawnJob[][] = []) => {
      const list = new SharedSpawnJobs(log, id, (jobs) => published.push(jobs), { pollMs: 50 });
      lists.push(list);
      return list;
    };
    try {
      await t.step("a write older than the row is refused", async () => {
        assert.equal(await log.put("rx", job("old", "sx", "running", 10)), true);
        assert.equal(await log.put("rx", { ...job("old", "sx", "cloning", 5), updatedAt: 5 }), false);
        assert.equal((await log.own("rx", 10))[0].job.state, "running");
        await sql`DELETE FROM spawn_jobs`;
      });

      const publishedB: SpawnJob[][] = [];
      const a = open("r0");
      const b = open("r1", publishedB);
      const spawned = job("j1", "s1", "queued", Date.now());
      await t.step("r0's job reaches r1's list and r1's browsers within a read", async () => {
        await replicas.beat("r0");
        await a.start();
        await b.start();
        a.add(spawned);
        a.update(spawned, "cloning");
        assert.ok(spawned.updatedAt > spawned.createdAt, "a change in the same millisecond is still later");
        await waitFor(
          () => b.list().find((j) => j.id === "j1")?.state === "cloning",
          "r1 lists it cloning",
          5000,
        );
        a.update(spawned, "running", { containerId: "pod-1" });
        await waitFor(
          () => b.list().find((j) => j.id === "j1")?.state === "running",
          "r1 lists it running",
          5000,
        );
        assert.equal(b.list().find((j) => j.id === "j1")?.containerId, "pod-1");
        assert.ok(publishedB.some((l) => l.some((j) => j.id === "j1" && j.state === "running")), "published");
        assert.deepEqual(a.list().map((j) => j.id), ["j1"]);
      });

      await t.step(
        "r0's job in progress is failed on r1 while r0 is gone, as it is once r0 beats",
        async () => {
          const second = job("j2", "s2", "queued", Date.now() + 1);
          a.add(second);
          a.update(second, "cloning");
          await waitFor(
            () => b.list().find((j) => j.id === "j2")?.state === "cloning",
            "r1 lists it cloning",
            5000,
          );
          await replicas.forget("r0");
          await waitFor(
            () => b.list().find((j) => j.id === "j2")?.state === "failed",
            "r1 lists it failed",
            5000,
          );
          assert.equal(
            b.list().find((j) => j.id === "j2")?.error,
            "replica r0 stopped before this spawn finished",
          );
          assert.equal(
            b.list().find((j) => j.id === "j1")?.state,
            "running",
            "a running job keeps its state",
          );
          await replicas.beat("r0");
          await waitFor(
            () => b.list().find((j) => j.id === "j2")?.state === "cloning",
            "r1 lists it again",
            5000,
          );
        },
      );

      await t.step("a worker r1 found again by label is hidden behind r0's spawned job", async () => {
        b.add({ ...job("found-1", "s1", "running", Date.now() + 2), branch: null });
        b.add({ ...job("found-3", "s3", "running", Date.now() + 3), branch: null });
        assert.deepEqual(b.list().filter((j) => j.sessionId === "s1").map((j) => j.id), ["j1"]);
        assert.ok(b.list().some((j) => j.id === "found-3"), "a worker no job here spawned is listed");
        await waitFor(() => a.list().some((j) => j.id === "found-3"), "r0 lists r1's found worker", 5000);
        assert.deepEqual(a.list().filter((j) => j.sessionId === "s1").map((j) => j.id), ["j1"]);
        assert.equal(b.own().length, 2, "r1 still follows both");
      });

      await t.step("r0 restarted takes back its rows; the one in progress is failed", async () => {
        await a.flushed();
        a.close();
        const again = open("r0");
        await again.start();
        assert.deepEqual(again.own().map((j) => j.id).sort(), ["j1", "j2"]);
        const j2 = again.own().find((j) => j.id === "j2")!;
        assert.equal(j2.state, "failed");
        assert.equal(j2.error, "replica r0 restarted before this spawn finished");
        assert.equal(again.own().find((j) => j.id === "j1")?.state, "running", "followed again");
        await waitFor(
          () => b.list().find((j) => j.id === "j2")?.state === "failed",
          "r1 lists it failed",
          5000,
        );
      });

      await t.step("the prune keeps the newest jobs, finished ones first to go", async () => {
        await sql`DELETE FROM spawn_jobs`;
        const n = 2 * MAX_JOBS + 5;
        // Old to new: odd ones failed, even ones running.
        for (let i = 1; i <= n; i++) {
          await log.put("rx", job(`p${i}`, `s${i}`, i % 2 ? "failed" : "running", i));
        }
        const gone = await log.prune(MAX_JOBS);
        // Past the newest MAX_JOBS (i <= 205) the failed go; past 2 × MAX_JOBS (i <= 5) every one.
        const [{ count }] = await sql`SELECT count(*)::int AS count FROM spawn_jobs`;
        assert.equal(count, MAX_JOBS + 100);
        assert.equal(gone, n - count);
        const left = await sql`SELECT id FROM spawn_jobs WHERE created_at <= 205 ORDER BY created_at`;
        assert.ok(
          left.every((r) => Number(String(r.id).slice(1)) % 2 === 0 && Number(String(r.id).slice(1)) > 5),
        );
        assert.equal(await log.prune(MAX_JOBS), 0, "a second prune finds nothing");
      });
    } finally {
      for (const list of lists) {
        list.close();
        await list.flushed();
      }
      await sql.end({ timeout: 5 });
    }
  },
);
