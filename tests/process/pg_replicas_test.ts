/**
 * The replicas' rows on a real PostgreSQL (lib/storage/pg_replicas.ts): a claim that reaches the database after
 * its deadline changes nothing, a release leaves a newer claim alone, and a holder counts only while its
 * replica's heartbeat is fresh.
 */
import assert from "node:assert/strict";
import { startPostgres } from "../../testing/postgres.ts";
import { openMigrated } from "../../lib/storage/pg_migrate.ts";
import { PgReplicas } from "../../lib/storage/pg_replicas.ts";
import { PgEventLog } from "../../lib/storage/pg_event_log.ts";
import { NotFoundError } from "../../lib/errors.ts";
import { sessionInfo } from "../../testing/agent.ts";

Deno.test("pg replicas: claims against a deadline, releases by epoch, holders by heartbeat", async (t) => {
  await using pg = await startPostgres();
  const sql = await openMigrated(await pg.newDatabase());
  try {
    const rows = new PgReplicas(sql);
    const log = new PgEventLog(sql);
    await log.ensureSession(sessionInfo("c1") as never);
    const dbNow = await rows.beat("a");

    await t.step("a claim in time moves the epoch on; one past its deadline changes nothing", async () => {
      assert.equal(await rows.claim("c1", "a", dbNow + 60_000), 1);
      assert.equal(await rows.claim("c1", "b", dbNow - 1), null, "too late");
      const [row] = await sql`SELECT holder, holder_epoch FROM sessions WHERE id = 'c1'`;
      assert.deepEqual(
        [row.holder, Number(row.holder_epoch)],
        ["a", 1],
        "the late claimant is not the holder",
      );
      await assert.rejects(() => rows.claim("nope", "a", dbNow + 60_000), NotFoundError);
    });

    await t.step("a release clears only its own epoch's claim", async () => {
      await rows.beat("b");
      assert.equal(await rows.claim("c1", "b", dbNow + 60_000), 2);
      await rows.release("c1", "a", 1); // a's socket went after b took over: b keeps it
      assert.deepEqual(await rows.heldElsewhere("a", 10_000), ["c1"]);
      await rows.release("c1", "b", 2);
      assert.deepEqual(await rows.heldElsewhere("a", 10_000), []);
    });

    await t.step("a holder whose heartbeat is stale, or who stopped cleanly, holds nothing", async () => {
      assert.equal(await rows.claim("c1", "b", dbNow + 60_000), 3);
      assert.deepEqual(await rows.heldElsewhere("a", 10_000), ["c1"]);
      await sql`UPDATE replicas SET seen_at = seen_at - 20000 WHERE id = 'b'`;
      assert.deepEqual(await rows.heldElsewhere("a", 10_000), [], "stale");
      await rows.beat("b");
      assert.deepEqual(await rows.heldElsewhere("a", 10_000), ["c1"], "seen again");
      await rows.forget("b");
      assert.deepEqual(await rows.heldElsewhere("a", 10_000), [], "stopped");
      assert.equal(await rows.held("c1"), true, "the row still names b until it is released");
    });
  } finally {
    await sql.end({ timeout: 1 });
  }
});
