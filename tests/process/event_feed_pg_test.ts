/**
 * What only the PostgreSQL event feed has, on a real server (testing/postgres.ts): the follower's LISTEN
 * backend killed mid-stream (with and without the periodic sweep: the re-LISTEN's own sweep must catch up),
 * and hints that lie (a payload is a hint, never the events).
 */
import assert from "node:assert/strict";
import postgres from "postgres";
import { adminClient, listeners, newDatabase, postgresTest } from "../../testing/storage_replicas.ts";
import { LIVE_MS, notes, percentiles, pgReplicas, Recorder, upTo } from "../../testing/event_feed.ts";
import { waitFor } from "../../testing/daemon.ts";
import { EVENTS_CHANNEL } from "../../lib/storage/pg_event_feed.ts";

postgresTest("event feed on PostgreSQL: LISTEN killed mid-stream, lying hints", async (t) => {
  await t.step(
    "B's LISTEN backend killed mid-stream: no gap, no repeat, each event < 1 s",
    () => listenerKilled(false),
  );
  await t.step("the same with no periodic sweep: listening again catches up", () => listenerKilled(true));
  await t.step("a hint's numbers are not trusted: only the table's rows are handed over", lyingHints);
});

async function listenerKilled(noSweep: boolean) {
  const url = await newDatabase();
  const db = new URL(url).pathname.slice(1);
  const admin = adminClient();
  const r = await pgReplicas(url, noSweep ? { sweepMs: 3_600_000 } : {});
  try {
    const rec = new Recorder();
    const stop = await r.feedB.follow(rec.onEvents, rec.onSessions);
    const ids = ["k1", "k2"];
    for (const id of ids) await r.create(id);
    const [pid] = await waitFor(async () => {
      const pids = await listeners(admin, db);
      return pids.length === 1 ? pids : null;
    }, "LISTEN");
    let writing = true;
    const writers = Promise.all(ids.map(async (id) => {
      while (writing) {
        const last = await r.append(id, notes(id, 5));
        rec.committed(id, upTo(last, last - 4));
      }
    }));
    await waitFor(() => ids.every((id) => rec.count(id) >= 100), "the stream before the kill");
    await admin`SELECT pg_terminate_backend(${pid})`;
    // Keep writing through the gap and past the re-LISTEN.
    await waitFor(async () => (await listeners(admin, db)).some((p) => p !== pid), "LISTEN again", 5_000);
    const after = ids.map((id) => rec.count(id));
    await waitFor(() => ids.every((id, i) => rec.count(id) >= after[i] + 100), "the stream after it", 5_000);
    writing = false;
    await writers;
    const last = await Promise.all(ids.map((id) => r.logA.lastSeq(id)));
    await waitFor(() => ids.every((id, i) => rec.count(id) >= last[i]), "every event", 5_000);
    stop();
    assert.deepEqual(rec.faults, []);
    ids.forEach((id, i) => assert.deepEqual(rec.seqs.get(id), upTo(last[i]), id));
    const f = percentiles(rec.latencies);
    console.log(
      `  sweep ${noSweep ? "off" : "on"}: ${rec.latencies.length} events, p50 ${f.p50.toFixed(2)} ms, p99 ${
        f.p99.toFixed(1)
      } ms, max ${f.max.toFixed(0)} ms (across the kill)`,
    );
    // With the sweep, what the killed listener missed is found within a period; without it, only once the
    // driver listens again (its backoff), which the test waited for.
    if (!noSweep) assert.ok(f.max < LIVE_MS, `slowest event took ${f.max.toFixed(0)} ms`);
  } finally {
    await r.close();
    await admin.end();
  }
}

async function lyingHints() {
  const url = await newDatabase();
  const admin = postgres(url, { max: 1, onnotice: () => {} });
  const r = await pgReplicas(url, { sweepMs: 3_600_000 });
  try {
    const rec = new Recorder();
    const stop = await r.feedB.follow(rec.onEvents, rec.onSessions);
    await r.create("h");
    await r.append("h", notes("h", 3));
    await waitFor(() => rec.count("h") >= 3, "the first events", LIVE_MS);
    // A counter far ahead, a session that does not exist, and junk: none of them is an event.
    for (const payload of ["h:99999", "nobody:7", "junk", ":5", "h:-7"]) {
      await admin`SELECT pg_notify(${EVENTS_CHANNEL}, ${payload})`;
    }
    await r.append("h", notes("h", 2));
    await waitFor(() => rec.count("h") >= 5, "the next events", LIVE_MS);
    stop();
    assert.deepEqual(rec.seqs.get("h"), upTo(5));
    assert.deepEqual(rec.faults, []);
    assert.deepEqual(rec.changes.map((c) => `${c.change} ${c.sessionId}`), ["created h"]);
  } finally {
    await r.close();
    await admin.end();
  }
}
