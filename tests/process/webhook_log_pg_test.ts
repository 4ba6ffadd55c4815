/**
 * What only the PostgreSQL webhook log has, on a real server (testing/postgres.ts): a claimant cut off by a
 * partition while its lease runs out, claims skipping a row another transaction holds instead of waiting,
 * three replicas draining one outbox on the real clock, an endpoint removed while another replica queues to
 * it, and a database at an older schema version migrated to the webhook tables.
 */
import assert from "node:assert/strict";
import { PgWebhookLog } from "../../lib/storage/pg_webhook_log.ts";
import { connectPostgres } from "../../lib/storage/pg_client.ts";
import { migrate, MIGRATIONS } from "../../lib/storage/pg_migrate.ts";
import type { WebhookLog } from "../../lib/storage/webhook_log.ts";
import { pausableProxy } from "../../testing/pausable_proxy.ts";
import { adminClient, newDatabase, postgresTest, runningServer } from "../../testing/storage_replicas.ts";
import { delivery, endpoint, openPgLogs, outcome } from "../../testing/webhook_log.ts";
import { waitFor } from "../../testing/daemon.ts";

postgresTest(
  "webhook log on PostgreSQL: partitioned claimant, skipped locks, three replicas, removal races, migration",
  async (t) => {
    await t.step(
      "A is cut off past its lease: B delivers, A's late result is refused",
      () => partitioned(),
    );
    await t.step("a row another transaction holds is skipped, not waited for", () => skipLocked());
    await t.step("three replicas drain 600 deliveries on the real clock, each once", () => threeReplicas());
    await t.step(
      "an endpoint removed while another replica queues to it leaves nothing pending",
      () => removalRace(),
    );
    await t.step("a database before the webhook migration gets the tables", () => upgrade());
  },
);

async function partitioned() {
  const url = await newDatabase();
  await using proxy = pausableProxy(runningServer().port);
  const leaseMs = 300;
  const a = await PgWebhookLog.open(url.replace(`:${runningServer().port}/`, `:${proxy.port}/`), {
    max: 1,
    leaseMs,
  });
  const b = await PgWebhookLog.open(url, { max: 1, leaseMs });
  try {
    await a.addEndpoint(endpoint("wh_a", ["run.settled"], Date.now()));
    await a.enqueue([delivery("x", "wh_a", Date.now())]);
    const [mine] = await a.claimDue("A", Date.now(), 5);
    assert.equal(mine.id, "x");
    // A's result is on the wire, unseen by the server, while its lease runs out and B takes the delivery.
    proxy.pause();
    const held = a.recordAttempt(mine, outcome(true, Date.now()), Date.now());
    const [taken] = await waitFor(
      async () => {
        const got = await b.claimDue("B", Date.now(), 5);
        return got.length ? got : null;
      },
      "B claims x once A's lease ran out",
      5_000,
    );
    assert.ok(taken.claim > mine.claim);
    assert.equal((await b.recordAttempt(taken, outcome(false, Date.now()), Date.now()))?.state, "pending");
    proxy.resume();
    assert.equal(await held, null, "A's late result is refused");
    const attempts = await a.log("wh_a");
    assert.equal(attempts.length, 1, "one attempt recorded: B's");
    assert.deepEqual([attempts[0].status, attempts[0].state], [503, "pending"]);
  } finally {
    await a.close();
    await b.close();
  }
}

async function skipLocked() {
  const url = await newDatabase();
  const db = new URL(url).pathname.slice(1);
  const admin = adminClient();
  const o = await openPgLogs(url);
  const holder = connectPostgres(url, { max: 1 });
  try {
    await o.log.addEndpoint(endpoint("wh_a", ["run.settled"], 1));
    await o.log.enqueue([delivery("a", "wh_a", 1), delivery("b", "wh_a", 2), delivery("c", "wh_a", 3)]);
    let locked!: () => void, release!: () => void;
    const inside = new Promise<void>((r) => locked = r);
    const gate = new Promise<void>((r) => release = r);
    // Another replica's claim in progress on the oldest row.
    const open = holder.begin(async (tx) => {
      await tx`SELECT id FROM webhook_outbox WHERE id = 'a' FOR UPDATE`;
      locked();
      await gate;
    });
    await inside;
    const started = performance.now();
    const got = await o.other.claimDue("B", 10, 10);
    const tookMs = performance.now() - started;
    assert.deepEqual(got.map((d) => d.id), ["b", "c"], "the held row is skipped");
    const [row] = await admin`SELECT count(*)::integer AS n FROM pg_stat_activity
      WHERE datname = ${db} AND wait_event_type = 'Lock'`;
    assert.equal(row.n, 0, "nobody waits on a lock");
    release();
    await open;
    assert.deepEqual((await o.log.claimDue("A", 10, 10)).map((d) => d.id), ["a"]);
    console.log(`claim beside a held row: ${tookMs.toFixed(1)} ms`);
  } finally {
    await holder.end();
    await o.close();
    await admin.end();
  }
}

async function threeReplicas() {
  const url = await newDatabase();
  const logs = await Promise.all([1, 2, 3].map(() => PgWebhookLog.open(url, { max: 3 })));
  try {
    await logs[0].addEndpoint(endpoint("wh_a", ["run.settled"], 1));
    const ids = Array.from({ length: 600 }, (_, i) => `d${i}`);
    for (let i = 0; i < ids.length; i += 100) {
      await logs[(i / 100) % 3].enqueue(ids.slice(i, i + 100).map((id) => delivery(id, "wh_a", Date.now())));
    }
    const seen = new Map<string, number>();
    // Two workers per replica, as the daemon's delivery concurrency would run them.
    const worker = async (log: WebhookLog, replica: string) => {
      let n = 0;
      for (;;) {
        const got = await log.claimDue(replica, Date.now(), 8);
        if (!got.length) return n;
        for (const d of got) seen.set(d.id, (seen.get(d.id) ?? 0) + 1);
        const done = await Promise.all(
          got.map((d) => log.recordAttempt(d, outcome(true, Date.now()), Date.now())),
        );
        assert.ok(done.every((s) => s?.state === "delivered"));
        n += got.length;
      }
    };
    const started = performance.now();
    const counts = await Promise.all(logs.flatMap((log, i) => [worker(log, `R${i}`), worker(log, `R${i}`)]));
    const ms = performance.now() - started;
    assert.deepEqual([...seen.values()].filter((n) => n !== 1), [], "no delivery claimed twice");
    assert.equal(seen.size, 600, "none left");
    assert.equal(await logs[1].nextDue(), null);
    assert.equal((await logs[2].log("wh_a", 1000)).length, 600, "one attempt each");
    console.log(
      `600 deliveries claimed and settled by 3 replicas × 2 workers in ${ms.toFixed(0)} ms ` +
        `(${(600 / (ms / 1000)).toFixed(0)}/s); per worker ${counts.join(", ")}`,
    );
  } finally {
    await Promise.all(logs.map((l) => l.close()));
  }
}

async function removalRace() {
  const url = await newDatabase();
  const o = await openPgLogs(url);
  try {
    let queued = 0;
    for (let i = 0; i < 20; i++) {
      const id = `wh_${i}`;
      await o.log.addEndpoint(endpoint(id, ["run.settled"], i));
      const rows = Array.from({ length: 5 }, (_, j) => delivery(`m${i}_${j}`, id, i));
      const [n, removed] = await Promise.all([o.log.enqueue(rows), o.other.removeEndpoint(id)]);
      assert.equal(removed, true);
      assert.ok(n === 0 || n === 5, `all of an event's rows or none (${n})`);
      queued += n;
    }
    assert.deepEqual(await o.log.claimDue("A", Number.MAX_SAFE_INTEGER, 1000), [], "nothing pending is left");
    assert.equal(await o.other.nextDue(), null);
    console.log(`removal races: ${queued / 5} of 20 enqueues went first (then deleted with their endpoint)`);
  } finally {
    await o.close();
  }
}

async function upgrade() {
  const url = await newDatabase();
  const mine = MIGRATIONS.find((m) => m.title.startsWith("webhook endpoints"))!;
  const sql = connectPostgres(url, { max: 1 });
  try {
    await migrate(sql, MIGRATIONS.filter((m) => m.version < mine.version));
    assert.ok((await migrate(sql)).applied.includes(mine.version));
    const log = await PgWebhookLog.open(url, { max: 1 });
    try {
      await log.addEndpoint(endpoint("wh_u", ["run.settled"], 1));
      assert.equal(await log.enqueue([delivery("u", "wh_u", 1)]), 1);
      const [claim] = await log.claimDue("A", 1, 1);
      assert.equal((await log.recordAttempt(claim, outcome(true, 1), 2))?.state, "delivered");
    } finally {
      await log.close();
    }
  } finally {
    await sql.end();
  }
}
