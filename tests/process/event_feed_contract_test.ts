/**
 * One contract, two event feeds: every case runs on SQLite (one file, two feed objects on its handle) and on
 * PostgreSQL (a real server from testing/postgres.ts, a fresh database per case, two replicas each with pools
 * of their own). A appends and announces; B's follower must get every event once, in order, within 1 s.
 */
import assert from "node:assert/strict";
import { type Postgres, postgresBinDir, startPostgres } from "../../testing/postgres.ts";
import {
  LIVE_MS,
  notes,
  percentiles,
  pgReplicas,
  Recorder,
  type Replicas,
  sqliteReplicas,
  upTo,
} from "../../testing/event_feed.ts";
import { waitFor } from "../../testing/daemon.ts";

let pg: Postgres | null = null;
const HAVE_POSTGRES = (await postgresBinDir()) !== null;

interface Implementation {
  name: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  open(options?: { sweepMs?: number }): Promise<Replicas>;
}

const sqlite: Implementation = {
  name: "sqlite",
  start: () => Promise.resolve(),
  stop: () => Promise.resolve(),
  open: (options) => sqliteReplicas(options),
};

const postgresImpl: Implementation = {
  name: "postgres",
  async start() {
    pg = await startPostgres();
  },
  async stop() {
    await pg?.close();
    pg = null;
  },
  async open(options) {
    return await pgReplicas(await pg!.newDatabase(), options);
  },
};

async function withReplicas(
  impl: Implementation,
  fn: (r: Replicas) => Promise<void>,
  options?: { sweepMs?: number },
): Promise<void> {
  const r = await impl.open(options);
  try {
    await fn(r);
  } finally {
    await r.close();
  }
}

/** 4 sessions × 500 events, appended concurrently on A in batches of 1–20: B gets each once, in order. */
async function concurrentStream(impl: Implementation) {
  await withReplicas(impl, async (r) => {
    const rec = new Recorder();
    const stop = await r.feedB.follow(rec.onEvents, rec.onSessions);
    const ids = ["s1", "s2", "s3", "s4"];
    for (const id of ids) await r.create(id);
    await Promise.all(ids.map(async (id, k) => {
      let written = 0;
      for (let i = 0; written < 500; i++) {
        const n = Math.min(500 - written, 1 + (i * 7 + k) % 20);
        const last = await r.append(id, notes(id, n));
        rec.committed(id, upTo(last, last - n + 1));
        written += n;
      }
    }));
    await waitFor(() => ids.every((id) => rec.count(id) >= 500), "every event on B", 5_000);
    stop();
    assert.deepEqual(rec.faults, []);
    for (const id of ids) assert.deepEqual(rec.seqs.get(id), upTo(500), id);
    assert.deepEqual(
      rec.changes.map((c) => `${c.change} ${c.sessionId}`).sort(),
      ids.map((id) => `created ${id}`),
    );
    const f = percentiles(rec.latencies);
    console.log(
      `  ${impl.name}: 2000 events A → B, p50 ${f.p50.toFixed(2)} ms, p99 ${f.p99.toFixed(2)} ms, max ${
        f.max.toFixed(1)
      } ms`,
    );
    assert.equal(rec.latencies.length, 2000);
    assert.ok(f.max < LIVE_MS, `slowest event took ${f.max.toFixed(0)} ms`);
  });
}

async function lateFollower(impl: Implementation) {
  await withReplicas(impl, async (r) => {
    await r.create("late");
    await r.append("late", notes("late", 100));
    const rec = new Recorder();
    const stop = await r.feedB.follow(rec.onEvents, rec.onSessions);
    await r.append("late", notes("late", 50));
    await waitFor(() => rec.count("late") >= 50, "the events after follow", LIVE_MS);
    // A sweep period later nothing older came in behind them.
    await r.append("late", notes("late", 1));
    await waitFor(() => rec.count("late") >= 51, "one more", LIVE_MS);
    stop();
    assert.deepEqual(rec.seqs.get("late"), upTo(151, 101));
    assert.deepEqual(rec.faults, []);
    assert.deepEqual(rec.changes, []);
  });
}

async function lostHint(impl: Implementation) {
  // The default sweep, and an appender that never announces: only the sweep can find these rows.
  await withReplicas(impl, async (r) => {
    const rec = new Recorder();
    const stop = await r.feedB.follow(rec.onEvents, rec.onSessions);
    await r.create("quiet");
    const t0 = performance.now();
    await r.append("quiet", notes("quiet", 30), { announce: false });
    await waitFor(() => rec.count("quiet") >= 30, "the unannounced events", LIVE_MS);
    const ms = performance.now() - t0;
    stop();
    assert.deepEqual(rec.seqs.get("quiet"), upTo(30));
    assert.ok(ms < LIVE_MS, `${ms} ms`);
  });
}

async function deletion(impl: Implementation) {
  await withReplicas(impl, async (r) => {
    const rec = new Recorder();
    const stop = await r.feedB.follow(rec.onEvents, rec.onSessions);
    await r.create("gone");
    await r.create("stays");
    await r.append("gone", notes("gone", 5));
    await waitFor(() => rec.count("gone") >= 5, "gone's events", LIVE_MS);
    assert.ok(await r.logA.deleteSession("gone"));
    r.feedA.announceDeleted("gone");
    await waitFor(() => rec.changes.some((c) => c.sessionId === "gone" && c.change === "deleted"), "deleted");
    await r.append("stays", notes("stays", 3));
    await waitFor(() => rec.count("stays") >= 3, "the other session's events", LIVE_MS);
    assert.deepEqual(rec.seqs.get("gone"), upTo(5));
    // Made anew under the same id: its events start again at 1, after a "created".
    await r.create("gone");
    await r.append("gone", notes("gone", 2));
    await waitFor(() => rec.count("gone") >= 7, "the new session's events", LIVE_MS);
    stop();
    assert.deepEqual(rec.seqs.get("gone"), [...upTo(5), 1, 2]);
    assert.deepEqual(
      rec.changes.filter((c) => c.sessionId === "gone").map((c) => c.change),
      ["created", "deleted", "created"],
    );
  });
}

async function pagedCatchUp(impl: Implementation) {
  // More than a page behind (1,700 events committed while the hint is lost): read page after page, in order.
  await withReplicas(impl, async (r) => {
    const rec = new Recorder();
    const stop = await r.feedB.follow(rec.onEvents);
    await r.create("big");
    for (let i = 0; i < 17; i++) await r.append("big", notes("big", 100), { announce: false });
    await waitFor(() => rec.count("big") >= 1_700, "the backlog", 5_000);
    stop();
    assert.deepEqual(rec.seqs.get("big"), upTo(1_700));
    assert.deepEqual(rec.faults, []);
  });
}

function contract(impl: Implementation) {
  Deno.test({
    name: `event feed contract (${impl.name})`,
    ignore: impl === postgresImpl && !HAVE_POSTGRES,
    fn: async (t) => {
      await impl.start();
      try {
        await t.step(
          "4 sessions × 500 events appended concurrently on A reach B once, in order, < 1 s",
          () => concurrentStream(impl),
        );
        await t.step("a follower started late gets only what came after", () => lateFollower(impl));
        await t.step(
          "events appended without a hint are found by the sweep within 1 s",
          () => lostHint(impl),
        );
        await t.step("a deleted session's events stop; one made anew starts at 1", () => deletion(impl));
        await t.step("a follower behind by several pages reads them in order", () => pagedCatchUp(impl));
      } finally {
        await impl.stop();
      }
    },
  });
}

contract(sqlite);
contract(postgresImpl);
