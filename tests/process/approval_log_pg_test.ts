/**
 * What only the PostgreSQL approval log has, on a real server (testing/postgres.ts): a decider held on the row
 * lock by another replica's open decision, a decider cut off from the database while another decides, the
 * hints after the LISTEN connection is killed, and a database at an older schema version migrated to the
 * approvals table.
 */
import assert from "node:assert/strict";
import postgres from "postgres";
import { PgApprovalLog, type PgDecisionWrites } from "../../lib/storage/pg_approval_log.ts";
import { connectPostgres } from "../../lib/storage/pg_client.ts";
import { migrate, MIGRATIONS } from "../../lib/storage/pg_migrate.ts";
import { pausableProxy } from "../../testing/pausable_proxy.ts";
import { adminClient, newDatabase, postgresTest, runningServer } from "../../testing/storage_replicas.ts";
import { hintFor, openPgLogs, request } from "../../testing/approval_log.ts";
import { waitFor } from "../../testing/daemon.ts";

postgresTest(
  "approval log on PostgreSQL: deciders held or cut off, hints after a killed LISTEN, migration",
  async (t) => {
    await t.step(
      "B decides while A's decision holds the row: B waits, then reads A's answer",
      () => heldRow(true),
    );
    await t.step(
      "A's decision rolls back while B waits on the row: B's answer is stored",
      () => heldRow(false),
    );
    await t.step(
      "A is cut off mid-decision while B decides: B wins, A learns B's answer",
      () => partitioned(),
    );
    await t.step(
      "the LISTEN connection killed: the other replica's change still hints",
      () => listenerKilled(),
    );
    await t.step("a database before the approvals migration gets the table", () => upgrade());
  },
);

/** Backends of the database waiting for a lock (the row lock of an open decision). */
async function lockWaiters(admin: postgres.Sql, db: string): Promise<number> {
  const [row] = await admin`SELECT count(*)::integer AS n FROM pg_stat_activity
    WHERE datname = ${db} AND wait_event_type = 'Lock'`;
  return row.n as number;
}

async function heldRow(commit: boolean) {
  const url = await newDatabase();
  const db = new URL(url).pathname.slice(1);
  const admin = adminClient();
  const o = await openPgLogs(url);
  try {
    await o.log.insert(request("h", "s", 1_000, { kind: "budget" }));
    let entered!: () => void, release!: (go: boolean) => void;
    const inside = new Promise<void>((r) => entered = r);
    const gate = new Promise<boolean>((r) => release = r);
    // A's UPDATE has run when its writes start: the row stays locked until they end.
    const slowRaise: PgDecisionWrites = async (tx) => {
      await tx`INSERT INTO test_raises VALUES ('s')`;
      entered();
      if (!await gate) throw new Error("the raise failed");
    };
    const a = o.log.decide("h", "approved", "alice", null, slowRaise).then((d) => d, (e: Error) => e);
    await inside;
    let bDone = false;
    const b = o.other.decide("h", "rejected", "bob", "no").finally(() => bDone = true);
    await waitFor(async () => await lockWaiters(admin, db) === 1, "B waiting on the row lock", 5_000);
    assert.equal(bDone, false, "B cannot answer while A's decision is open");
    release(commit);
    const [aOutcome, bOutcome] = await Promise.all([a, b]);
    if (commit) {
      assert.ok(!(aOutcome instanceof Error) && aOutcome.won, "A's decision was stored");
      assert.equal(bOutcome.won, false);
      assert.deepEqual(bOutcome.approval, aOutcome.approval, "B is handed A's row");
      assert.equal(bOutcome.approval.state, "approved");
      assert.equal(await o.raised("s"), 1);
    } else {
      assert.ok(aOutcome instanceof Error && /raise failed/.test(aOutcome.message));
      assert.equal(bOutcome.won, true, "A stored nothing, so B's answer is the first");
      assert.deepEqual([bOutcome.approval.state, bOutcome.approval.decidedBy], ["rejected", "bob"]);
      assert.equal(await o.raised("s"), 0);
    }
    assert.deepEqual(await o.log.get("h"), bOutcome.approval);
  } finally {
    await o.close();
    await admin.end();
  }
}

async function partitioned() {
  const url = await newDatabase();
  await using proxy = pausableProxy(runningServer().port);
  const a = await PgApprovalLog.open(url.replace(`:${runningServer().port}/`, `:${proxy.port}/`), { max: 1 });
  const b = await PgApprovalLog.open(url, { max: 1 });
  try {
    await a.insert(request("x", "s", 1_000));
    // A's answer is on the wire, unseen by the server, while B answers.
    proxy.pause();
    const held = a.decide("x", "approved", "alice", null);
    const won = await b.decide("x", "rejected", "bob", null);
    assert.equal(won.won, true);
    proxy.resume();
    const late = await held;
    assert.equal(late.won, false);
    assert.deepEqual(late.approval, won.approval, "A reads B's answer, never its own");
    assert.deepEqual(await a.get("x"), won.approval);
  } finally {
    await a.close();
    await b.close();
  }
}

async function listenerKilled() {
  const url = await newDatabase();
  const db = new URL(url).pathname.slice(1);
  const admin = adminClient();
  // No sweep: only a listener that LISTENs again (and its sweep on re-LISTEN) can bring the hint.
  const o = await openPgLogs(url, { sweepMs: 3_600_000 });
  try {
    const stop = o.log.subscribe(() => {});
    const [pid] = await waitFor(
      async () => {
        const rows = await admin`SELECT pid FROM pg_stat_activity
        WHERE datname = ${db} AND state = 'idle' AND query ILIKE 'listen%'`;
        return rows.length === 1 ? [Number(rows[0].pid)] : null;
      },
      "LISTEN",
      5_000,
    );
    await admin`SELECT pg_terminate_backend(${pid})`;
    const heard = hintFor(o.log, "k", 5_000);
    await o.other.insert(request("after", "k", 1));
    await heard;
    stop();
    assert.deepEqual((await o.log.pending()).map((r) => r.id), ["after"]);
  } finally {
    await o.close();
    await admin.end();
  }
}

async function upgrade() {
  const url = await newDatabase();
  const mine = MIGRATIONS.find((m) => m.title.startsWith("approvals:"))!;
  const sql = connectPostgres(url, { max: 1 });
  try {
    await migrate(sql, MIGRATIONS.filter((m) => m.version < mine.version));
    assert.ok((await migrate(sql)).applied.includes(mine.version));
    const log = await PgApprovalLog.open(url, { max: 1 });
    try {
      assert.equal(await log.insert(request("u", "s", 1)), true);
      assert.equal((await log.decide("u", "approved", "alice", null)).won, true);
    } finally {
      await log.close();
    }
  } finally {
    await sql.end();
  }
}
