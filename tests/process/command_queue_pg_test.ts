/**
 * What only the PostgreSQL command queue has, on a real server (testing/postgres.ts): an old holder cut off
 * from the database is fenced after a takeover, the wake-up survives its LISTEN connection being killed or
 * going silent, and a database at an older schema version is migrated to the commands table.
 */
import assert from "node:assert/strict";
import { FencedError } from "../../lib/storage/event_log.ts";
import { PgEventLog } from "../../lib/storage/pg_event_log.ts";
import { PgCommandQueue } from "../../lib/storage/pg_command_queue.ts";
import { connectPostgres } from "../../lib/storage/pg_client.ts";
import { migrate, MIGRATIONS } from "../../lib/storage/pg_migrate.ts";
import { pausableProxy } from "../../testing/pausable_proxy.ts";
import type { Postgres } from "../../testing/postgres.ts";
import {
  adminClient,
  listeners,
  newDatabase,
  postgresTest,
  runningServer,
} from "../../testing/storage_replicas.ts";
import { hintFor, info, messages, openPgQueues, prompt } from "../../testing/command_queue.ts";
import { waitFor } from "../../testing/daemon.ts";

postgresTest("command queue on PostgreSQL: fencing, wake-up faults, migration", async (t) => {
  await t.step(
    "a partitioned old holder's ack is refused after the takeover",
    () => partitionedAck(runningServer()),
  );
  await t.step(
    "the LISTEN connection killed: the command still wakes the holder within the deadline",
    () => listenerKilled(false),
  );
  await t.step(
    "the LISTEN connection killed, no sweep: the queue listens again and hears hints",
    () => listenerKilled(true),
  );
  await t.step(
    "a listener gone silent without a reset is replaced by the watchdog",
    () => deafListener(),
  );
  await t.step(
    "a database at schema version 1 gets the commands table; its sessions take commands",
    async () => {
      const url = await newDatabase();
      const sql = connectPostgres(url, { max: 1 });
      try {
        await migrate(sql, MIGRATIONS.slice(0, 1));
        await sql`INSERT INTO sessions(id, info) VALUES ('v1', '{}')`;
        // Every later version applies too (2 is the commands table).
        assert.deepEqual((await migrate(sql)).applied, MIGRATIONS.slice(1).map((m) => m.version));
        const queue = await PgCommandQueue.open(url, { max: 1 });
        try {
          assert.equal((await queue.enqueue("v1", prompt("v1", "up"))).pos, 1);
        } finally {
          await queue.close();
        }
      } finally {
        await sql.end();
      }
    },
  );
});

async function listenerKilled(noSweep: boolean) {
  const url = await newDatabase();
  const db = new URL(url).pathname.slice(1);
  const admin = adminClient();
  const o = await openPgQueues(url, noSweep ? { sweepMs: 3_600_000 } : {});
  try {
    await o.log.ensureSession(info("k"));
    const holder = { epoch: await o.log.claimHolder("k", "r1") };
    const stop = o.queue.subscribe(() => {});
    const [pid] = await waitFor(async () => {
      const pids = await listeners(admin, db);
      return pids.length === 1 ? pids : null;
    }, "LISTEN");
    await admin`SELECT pg_terminate_backend(${pid})`;
    if (noSweep) {
      // Only a new LISTEN can bring the hint now: wait for it, then prove it hears.
      await waitFor(async () => (await listeners(admin, db)).some((p) => p !== pid), "LISTEN again", 5_000);
    }
    const heard = hintFor(o.queue, "k");
    await o.other.enqueue("k", prompt("k", "after the kill"));
    await heard;
    assert.deepEqual(messages(await o.queue.take("k", holder)), ["after the kill"]);
    stop();
  } finally {
    await o.close();
    await admin.end();
  }
}

async function partitionedAck(server: Postgres) {
  const url = await server.newDatabase();
  await using proxy = pausableProxy(server.port);
  const log = await PgEventLog.open(url, { max: 1 });
  const a = await PgCommandQueue.open(url.replace(`:${server.port}/`, `:${proxy.port}/`), { max: 1 });
  const b = await PgCommandQueue.open(url, { max: 1 });
  try {
    await log.ensureSession(info("q"));
    const old = { epoch: await log.claimHolder("q", "replica-a") };
    await b.enqueue("q", prompt("q", "held"));
    const [cmd] = await a.take("q", old);
    // A wrote the frame to its socket, then lost the database: its ack is on the wire, unseen by the server.
    proxy.pause();
    const outcome = a.ack("q", old, [cmd.pos]).then((n) => n, (e) => e);
    const current = { epoch: await log.claimHolder("q", "replica-b") };
    const again = await b.take("q", current);
    assert.deepEqual(again.map((c) => [c.pos, c.redelivered]), [[cmd.pos, true]]);
    proxy.resume();
    const error = await outcome;
    assert.ok(error instanceof FencedError, `the old holder's ack ended as ${error}`);
    assert.equal(await b.ack("q", current, [cmd.pos]), 1);
  } finally {
    await a.close();
    await b.close();
    await log.close();
  }
}

async function deafListener() {
  const url = await newDatabase();
  await using proxy = pausableProxy(runningServer().port);
  const o = await openPgQueues(url);
  // The first listener goes through a relay that will fall silent, as a dropped NAT or load balancer entry
  // does (no reset: the driver notices nothing); the ones after it connect directly.
  let built = 0;
  const queue = new PgCommandQueue(
    connectPostgres(url, { max: 2 }),
    () =>
      connectPostgres(built++ ? url : url.replace(`:${runningServer().port}/`, `:${proxy.port}/`), {
        max: 1,
      }),
    { sweepMs: 3_600_000, pingMs: 100, ownsPool: true },
  );
  try {
    await o.log.ensureSession(info("z"));
    const holder = { epoch: await o.log.claimHolder("z", "r1") };
    const stop = queue.subscribe(() => {});
    const warm = hintFor(queue, "z", 5_000);
    await o.other.enqueue("z", prompt("z", "through the relay"));
    await warm;
    assert.deepEqual(messages(await queue.take("z", holder)), ["through the relay"]);
    proxy.pause();
    // No sweep: only a listener that hears can wake the holder; the watchdog must notice the silence.
    await waitFor(() => built > 1, "the watchdog's new listener", 5_000);
    const heard = hintFor(queue, "z");
    await o.other.enqueue("z", prompt("z", "heard again"));
    await heard;
    assert.deepEqual(messages(await queue.take("z", holder)), ["heard again"]);
    stop();
  } finally {
    await queue.close();
    await o.close();
  }
}
