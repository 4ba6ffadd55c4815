/**
 * Leadership among replicas (lib/replica/leader.ts) on a real PostgreSQL server: two leaderships on one
 * database stand for two replicas. Exactly one leads; its connection killed with `pg_terminate_backend`, the
 * other leads within a deadline and the old one knows it lost; a closed leader hands over; a leader whose
 * database stops answering (a paused relay) steps down.
 */
import assert from "node:assert/strict";
import postgres from "postgres";
import { adminClient, newDatabase, postgresTest, runningServer } from "../../testing/storage_replicas.ts";
import { pausableProxy } from "../../testing/pausable_proxy.ts";
import { waitFor } from "../../testing/daemon.ts";
import { connectPostgres } from "../../lib/storage/pg_client.ts";
import { LEADER_LOCK, Leadership } from "../../lib/replica/leader.ts";

const CHECK_MS = 200;
/** A takeover after the leader's connection died: the follower's next round, with room for a busy machine. */
const TAKEOVER_DEADLINE_MS = 3_000;

function leadership(url: string): Leadership {
  return new Leadership(() => connectPostgres(url, { max: 1 }), { checkMs: CHECK_MS });
}

/** The backend pid holding the leader lock in the database, or null. */
async function lockHolder(admin: postgres.Sql, db: string): Promise<number | null> {
  const [k1, k2] = LEADER_LOCK;
  const rows = await admin`SELECT l.pid FROM pg_locks l JOIN pg_database d ON d.oid = l.database
    WHERE l.locktype = 'advisory' AND l.granted AND l.classid = ${k1} AND l.objid = ${k2}
      AND l.objsubid = 2 AND d.datname = ${db}`;
  return rows.length ? rows[0].pid as number : null;
}

postgresTest(
  "leader: one of two leads; its connection killed, the other leads within the deadline",
  async () => {
    const url = await newDatabase();
    const db = new URL(url).pathname.slice(1);
    const admin = adminClient();
    const a = leadership(url);
    const b = leadership(url);
    const changes: string[] = [];
    a.onChange((leading) => changes.push(`a:${leading}`));
    b.onChange((leading) => changes.push(`b:${leading}`));
    try {
      await a.start();
      await b.start();
      assert.equal(a.isLeader(), true, "the first to try leads");
      assert.equal(b.isLeader(), false);
      // Rounds go by: still exactly one.
      for (let i = 0; i < 5; i++) {
        await Promise.all([a.check(), b.check()]);
        assert.equal(Number(a.isLeader()) + Number(b.isLeader()), 1, "exactly one leads");
      }
      const pid = await lockHolder(admin, db);
      assert.ok(pid !== null, "the lock is held in the database");

      await admin`SELECT pg_terminate_backend(${pid})`;
      const killedAt = performance.now();
      await waitFor(() => b.isLeader(), "b leads after a's connection died", TAKEOVER_DEADLINE_MS);
      const tookMs = performance.now() - killedAt;
      await waitFor(() => !a.isLeader(), "a knows it lost", TAKEOVER_DEADLINE_MS);
      console.log(`takeover after pg_terminate_backend: ${tookMs.toFixed(0)} ms (round ${CHECK_MS} ms)`);
      for (let i = 0; i < 5; i++) {
        await Promise.all([a.check(), b.check()]);
        assert.equal(a.isLeader(), false, "a, on its new connection, does not take the lock back");
        assert.equal(b.isLeader(), true);
      }
      assert.notEqual(await lockHolder(admin, db), pid);
      assert.deepEqual(changes.slice().sort(), ["a:false", "a:true", "b:true"], "each change told once");
      assert.equal(changes[0], "a:true");

      // A leader that closes hands over at the other's next round.
      await b.close();
      assert.equal(b.isLeader(), false);
      await waitFor(() => a.isLeader(), "a leads after b closed", TAKEOVER_DEADLINE_MS);
    } finally {
      await a.close();
      await b.close();
      await admin.end();
    }
  },
);

postgresTest("leader: a leader whose database stops answering steps down", async () => {
  const url = new URL(await newDatabase());
  const proxy = pausableProxy(runningServer().port);
  url.host = `127.0.0.1:${proxy.port}`;
  const a = leadership(String(url));
  try {
    await a.start();
    assert.equal(a.isLeader(), true);
    proxy.pause();
    await waitFor(() => !a.isLeader(), "a steps down while cut off", 4 * CHECK_MS + 2_000);
  } finally {
    proxy.resume();
    await a.close();
    await proxy.close();
  }
});
