/**
 * The PostgreSQL schema's migrations (lib/storage/pg_migrate.ts) on a real server: two replicas starting
 * together migrate once, a failing migration leaves nothing of its call, a schema newer than this build is
 * refused, and an unreachable database fails the open naming its address.
 */
import assert from "node:assert/strict";
import { PgEventLog } from "../../lib/storage/pg_event_log.ts";
import { connectPostgres } from "../../lib/storage/pg_client.ts";
import { migrate, MIGRATIONS } from "../../lib/storage/pg_migrate.ts";
import { type Postgres, postgresBinDir, startPostgres } from "../../testing/postgres.ts";
import { freePort } from "../../testing/daemon.ts";

Deno.test({
  name: "postgres migrations",
  ignore: (await postgresBinDir()) === null,
  fn: async (t) => {
    await using server = await startPostgres();
    await t.step("two replicas starting together migrate once", () => concurrentMigrations(server));
    await t.step("a failing migration rolls back every step of the call", () => failedMigration(server));
    await t.step("a schema newer than this build is refused", () => newerSchema(server));
    await t.step("an unreachable database fails the open, naming the address", async () => {
      const port = freePort();
      await assert.rejects(
        PgEventLog.open(`postgres://lvmh:x@127.0.0.1:${port}/lvmh`, { connectTimeout: 5 }),
        (e: Error) => e.message === `connect ECONNREFUSED 127.0.0.1:${port}`,
      );
    });
  },
});

async function concurrentMigrations(server: Postgres) {
  const url = await server.newDatabase();
  const one = connectPostgres(url, { max: 1 });
  const two = connectPostgres(url, { max: 1 });
  try {
    const results = await Promise.all([migrate(one), migrate(two)]);
    const newest = MIGRATIONS.at(-1)!.version;
    assert.deepEqual(results.map((r) => r.applied.length).sort(), [0, MIGRATIONS.length]);
    assert.ok(results.every((r) => r.to === newest));
    const versions = await one`SELECT version FROM schema_version ORDER BY version`;
    assert.deepEqual(versions.map((v) => v.version), MIGRATIONS.map((m) => m.version));
    const again = await migrate(two);
    assert.deepEqual(again, { from: newest, to: newest, applied: [] });
  } finally {
    await one.end();
    await two.end();
  }
}

async function failedMigration(server: Postgres) {
  const sql = connectPostgres(await server.newDatabase(), { max: 1 });
  try {
    await assert.rejects(
      migrate(sql, [
        { version: 1, title: "fine", sql: "CREATE TABLE first_step(x int)" },
        { version: 2, title: "broken", sql: "CREATE TABLE first_step(x int)" },
      ]),
      /already exists/,
    );
    const [row] = await sql`SELECT to_regclass('first_step') AS t, to_regclass('schema_version') AS v`;
    assert.deepEqual([row.t, row.v], [null, null]);
  } finally {
    await sql.end();
  }
}

async function newerSchema(server: Postgres) {
  const sql = connectPostgres(await server.newDatabase(), { max: 1 });
  try {
    await migrate(sql);
    await sql`INSERT INTO schema_version(version, title) VALUES (999, 'from the future')`;
    await assert.rejects(migrate(sql), /schema is version 999, newer than this lvmh's/);
  } finally {
    await sql.end();
  }
}
