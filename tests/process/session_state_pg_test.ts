/**
 * What only PostgreSQL has for the session state logs: a replica cut off by a partition while another acts on
 * the same worker (its late move is refused, as the holder fence refuses a late append), and a database at
 * schema 7 brought up to schema 8 with its rows kept.
 */
import assert from "node:assert/strict";
import { pausableProxy } from "../../testing/pausable_proxy.ts";
import { newDatabase, postgresTest, runningServer } from "../../testing/storage_replicas.ts";
import { connectPostgres } from "../../lib/storage/pg_client.ts";
import { migrate, MIGRATIONS } from "../../lib/storage/pg_migrate.ts";
import { PgSessionStateLog } from "../../lib/storage/pg_session_state_log.ts";
import { PgUsageRunLog } from "../../lib/storage/pg_usage_run_log.ts";

/** A resume sent by A while A is partitioned, after B resumed and started the worker: A's move is refused. */
async function partitioned() {
  const url = await newDatabase();
  await using proxy = pausableProxy(runningServer().port);
  const a = await PgSessionStateLog.open(url.replace(`:${runningServer().port}/`, `:${proxy.port}/`), {
    max: 1,
  });
  const b = await PgSessionStateLog.open(url, { max: 1 });
  try {
    await b.setContainer("s", "g/p", "stopped", { logs: "bye\n" });
    proxy.pause();
    const late = a.setContainer("s", "g/p", "starting", { from: ["stopped"] });
    assert.equal(await b.setContainer("s", "g/p", "starting", { from: ["stopped"] }), true);
    assert.equal(await b.setContainer("s", "g/p", "running", { from: ["starting"] }), true);
    proxy.resume();
    assert.equal(await late, false, "the partitioned replica's resume is refused");
    assert.equal((await a.container("s"))?.state, "running");
    assert.equal(await a.containerLogs("s"), null, "B's start forgot the old logs; A wrote nothing");
  } finally {
    await a.close();
    await b.close();
  }
}

async function upgrade() {
  const url = await newDatabase();
  const sql = connectPostgres(url, { max: 1 });
  try {
    await migrate(sql, MIGRATIONS.filter((m) => m.version < 8));
    await sql`INSERT INTO settings(key, value) VALUES ('gitlab.username', 'alice')`;
    assert.ok((await migrate(sql)).applied.includes(8));
    const [kept] = await sql`SELECT value FROM settings WHERE key = 'gitlab.username'`;
    assert.equal(kept.value, "alice");
    const state = await PgSessionStateLog.open(url, { max: 1 });
    const usage = await PgUsageRunLog.open(url, { max: 1 });
    try {
      await state.putBudget("s", { maxCost: 1, maxTokens: null, onReach: "ask" }, "session");
      assert.equal(await state.raiseBudget("s", null), true);
      assert.equal((await state.budget("s"))?.raisedCost, 1);
      assert.equal(await usage.seenOf("s"), null);
    } finally {
      await state.close();
      await usage.close();
    }
  } finally {
    await sql.end();
  }
}

postgresTest("session state on PostgreSQL only", async (t) => {
  await t.step("a partitioned replica's worker move is refused after another acted", partitioned);
  await t.step("a database at schema 7 is brought up to schema 8, its rows kept", upgrade);
});
