/**
 * One contract, two command queues: every case runs against the SQLite queue (a real file, beside the daemon's
 * Store and its event log) and the PostgreSQL queue (a real server from testing/postgres.ts, a fresh database
 * per case). `other` is a second queue object on the same database: another replica on PostgreSQL, another
 * part of the one daemon on SQLite.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import postgres from "postgres";
import type { SessionInfo } from "../lib/protocol.ts";
import { Store } from "../lib/store.ts";
import { InvalidError, NotFoundError } from "../lib/errors.ts";
import { type EventLog, FencedError } from "../lib/storage/event_log.ts";
import { SqliteEventLog } from "../lib/storage/sqlite_event_log.ts";
import { PgEventLog } from "../lib/storage/pg_event_log.ts";
import type { CommandFrame, CommandQueue } from "../lib/storage/command_queue.ts";
import { SqliteCommandQueue } from "../lib/storage/sqlite_command_queue.ts";
import { PgCommandQueue } from "../lib/storage/pg_command_queue.ts";
import { connectPostgres } from "../lib/storage/pg_client.ts";
import { migrate, MIGRATIONS } from "../lib/storage/pg_migrate.ts";
import { pausableProxy, type Postgres, postgresBinDir, startPostgres } from "../testing/postgres.ts";
import { sessionInfo } from "../testing/agent.ts";
import { waitFor } from "../testing/daemon.ts";

/** What the issue promises: a command made on any replica reaches the holder within this. */
const WAKE_MS = 1_000;

const info = (id: string) => sessionInfo(id) as SessionInfo;
const prompt = (sessionId: string, message: string): CommandFrame => ({
  v: 1,
  sessionId,
  seq: 0,
  ts: 1_000,
  type: "prompt",
  promptId: `p-${message}`,
  message,
  deliverAs: "followUp",
});
const messages = (cmds: { frame: CommandFrame }[]) =>
  cmds.map((c) => (c.frame as { message: string }).message);

interface Opened {
  log: EventLog;
  queue: CommandQueue;
  other: CommandQueue;
  /** Insert a command the way another writer would, sending no hint (as if the hint was lost). */
  insertUnhinted(sessionId: string, frame: CommandFrame): Promise<void>;
  close(): Promise<void>;
}

let pg: Postgres | null = null;
const HAVE_POSTGRES = (await postgresBinDir()) !== null;

async function openSqlite(): Promise<Opened> {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-commands-" });
  const store = new Store(`${dir}/lvmh.db`);
  const log = new SqliteEventLog(store);
  const queue = new SqliteCommandQueue(store.db, log);
  const other = new SqliteCommandQueue(store.db, log);
  return {
    log,
    queue,
    other,
    insertUnhinted(sessionId, frame) {
      // Another handle on the file: a writer this process's in-process hint knows nothing of.
      const db = new DatabaseSync(`${dir}/lvmh.db`);
      try {
        const { pos } = db.prepare(`INSERT INTO command_counters(sessionId, lastPos) VALUES (?, 1)
          ON CONFLICT(sessionId) DO UPDATE SET lastPos = lastPos + 1 RETURNING lastPos AS pos`)
          .get(sessionId) as { pos: number };
        db.prepare("INSERT INTO commands(sessionId, pos, frame, enqueuedAt) VALUES (?, ?, ?, ?)")
          .run(sessionId, pos, JSON.stringify(frame), Date.now());
      } finally {
        db.close();
      }
      return Promise.resolve();
    },
    async close() {
      await queue.close();
      await other.close();
      store.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

async function openPostgres(
  url?: string,
  options: { sweepMs?: number; pingMs?: number } = {},
): Promise<Opened> {
  url ??= await pg!.newDatabase();
  const log = await PgEventLog.open(url, { max: 2 });
  const queue = await PgCommandQueue.open(url, { max: 4, ...options });
  const other = await PgCommandQueue.open(url, { max: 4, ...options });
  const raw = connectPostgres(url, { max: 1 });
  return {
    log,
    queue,
    other,
    async insertUnhinted(sessionId, frame) {
      await raw`WITH c AS (UPDATE sessions SET last_cmd_pos = last_cmd_pos + 1 WHERE id = ${sessionId}
          RETURNING last_cmd_pos)
        INSERT INTO commands(session_id, pos, frame, enqueued_at)
          SELECT ${sessionId}, last_cmd_pos, ${JSON.stringify(frame)}, ${Date.now()} FROM c`;
    },
    async close() {
      await queue.close();
      await other.close();
      await log.close();
      await raw.end();
    },
  };
}

/** Resolves with the ms from arming to the first hint for `sessionId`, rejects past the deadline. */
function hintFor(queue: CommandQueue, sessionId: string, deadlineMs = WAKE_MS): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      stop();
      reject(new Error(`no hint for ${sessionId} within ${deadlineMs} ms`));
    }, deadlineMs);
    const stop = queue.subscribe((id) => {
      if (id !== sessionId) return;
      clearTimeout(timer);
      stop();
      resolve(performance.now() - t0);
    });
  });
}

function contract(name: string, open: () => Promise<Opened>, more?: (t: Deno.TestContext) => Promise<void>) {
  const withQueue = async (fn: (o: Opened) => Promise<void>) => {
    const opened = await open();
    try {
      await fn(opened);
    } finally {
      await opened.close();
    }
  };
  Deno.test({
    name: `command queue contract (${name})`,
    ignore: name === "postgres" && !HAVE_POSTGRES,
    fn: async (t) => {
      if (name === "postgres") pg = await startPostgres();
      try {
        await t.step(
          "4 concurrent enqueuers × 200: positions 1…800, each enqueuer's order kept",
          () =>
            withQueue(async ({ log, queue, other }) => {
              await log.ensureSession(info("s"));
              const holder = { epoch: await log.claimHolder("s", "r1") };
              const ENQUEUERS = 4, EACH = 200, ALL = ENQUEUERS * EACH;
              const taken: number[] = [];
              let enqueuedAt = 0;
              // The holder takes while the commands come in: what it takes must always continue the positions.
              const taker = (async () => {
                while (!enqueuedAt || taken.length < ALL) {
                  if (enqueuedAt && Date.now() - enqueuedAt > 10_000) {
                    assert.fail(`taker stuck at ${taken.length}`);
                  }
                  const got = await queue.take("s", holder, 50);
                  for (const c of got) {
                    assert.equal(c.pos, taken.length + 1, `took ${c.pos} after ${taken.length}`);
                    taken.push(c.pos);
                  }
                  if (!got.length) await new Promise((r) => setTimeout(r, 2));
                }
              })();
              // Its failure is reported below, once the enqueuers are done, not as an unhandled rejection.
              const takerEnd = taker.then(() => null, (error) => error);
              const positions = await Promise.all(Array.from({ length: ENQUEUERS }, async (_, e) => {
                const mine: number[] = [];
                for (let i = 0; i < EACH; i++) {
                  mine.push((await (e % 2 ? other : queue).enqueue("s", prompt("s", `${e}:${i}`))).pos);
                }
                return mine;
              }));
              enqueuedAt = Date.now();
              const takerError = await takerEnd;
              if (takerError) throw takerError;
              assert.deepEqual(taken, Array.from({ length: ALL }, (_, i) => i + 1));
              for (const mine of positions) assert.ok(mine.every((p, i) => i === 0 || p > mine[i - 1]));
              assert.deepEqual(positions.flat().sort((a, b) => a - b), taken);
              // Read back in order: each enqueuer's commands appear in the order it sent them.
              const again = await queue.take("s", { epoch: await log.claimHolder("s", "r2") }, ALL);
              assert.equal(again.length, ALL);
              for (let e = 0; e < ENQUEUERS; e++) {
                const mine = messages(again).filter((m) => m.startsWith(`${e}:`));
                assert.deepEqual(mine, Array.from({ length: EACH }, (_, i) => `${e}:${i}`));
              }
            }),
        );

        await t.step(
          "ack once; a new holder gets again what was not acknowledged, never what was",
          () =>
            withQueue(async ({ log, queue, other }) => {
              await log.ensureSession(info("a"));
              const first = { epoch: await log.claimHolder("a", "r1") };
              for (const m of ["one", "two", "three"]) await other.enqueue("a", prompt("a", m));
              const got = await queue.take("a", first);
              assert.deepEqual(got.map((c) => [c.pos, c.redelivered]), [[1, false], [2, false], [3, false]]);
              assert.deepEqual(messages(got), ["one", "two", "three"]);
              assert.equal(got[0].frame.type, "prompt");
              assert.equal(await queue.ack("a", first, [1, 2]), 2);
              assert.equal(await queue.ack("a", first, [1, 2]), 0, "a repeated ack changes nothing");
              assert.deepEqual(await queue.take("a", first), [], "one epoch is handed a command once");
              assert.equal(await other.unacknowledged("a"), 1);
              // Takeover by another replica: only the unacknowledged one comes again, marked as such.
              const second = { epoch: await log.claimHolder("a", "r2") };
              const again = await other.take("a", second);
              assert.deepEqual(again.map((c) => [c.pos, c.redelivered]), [[3, true]]);
              assert.equal(await other.ack("a", second, [3, 99]), 1);
              assert.equal(await queue.unacknowledged("a"), 0);
              const third = { epoch: await log.claimHolder("a", "r1") };
              assert.deepEqual(await queue.take("a", third), []);
              assert.equal((await queue.enqueue("a", prompt("a", "four"))).pos, 4);
              assert.deepEqual(messages(await queue.take("a", third)), ["four"]);
            }),
        );

        await t.step(
          "a stale epoch is refused for take and ack; unknown sessions and foreign frames too",
          () =>
            withQueue(async ({ log, queue, other }) => {
              await log.ensureSession(info("f"));
              const old = { epoch: await log.claimHolder("f", "r1") };
              await queue.enqueue("f", prompt("f", "x"));
              const [x] = await queue.take("f", old);
              const current = { epoch: await log.claimHolder("f", "r2") };
              const fenced = (e: unknown) => e instanceof FencedError && e.current === current.epoch;
              await assert.rejects(queue.take("f", old), fenced);
              await assert.rejects(queue.ack("f", old, [x.pos]), fenced);
              await assert.rejects(queue.ack("f", old, []), fenced);
              const redelivered = await other.take("f", current);
              assert.deepEqual(redelivered.map((c) => c.pos), [x.pos], "the fenced ack acknowledged nothing");
              await assert.rejects(queue.enqueue("nobody", prompt("nobody", "y")), NotFoundError);
              await assert.rejects(queue.take("nobody", { epoch: 0 }), NotFoundError);
              await assert.rejects(queue.enqueue("f", prompt("g", "y")), InvalidError);
              assert.equal(await queue.unacknowledged("f"), 1);
            }),
        );

        await t.step(
          `a command enqueued on the other queue wakes this one within ${WAKE_MS} ms`,
          () =>
            withQueue(async ({ log, queue, other }) => {
              const waits: number[] = [];
              // The daemon subscribes once at start; the first hint also proves the listener is in place.
              const keep = queue.subscribe(() => {});
              await log.ensureSession(info("warm"));
              const warm = hintFor(queue, "warm", 5_000);
              await other.enqueue("warm", prompt("warm", "up"));
              await warm;
              for (let i = 0; i < 10; i++) {
                const id = `w${i}`;
                await log.ensureSession(info(id));
                const holder = { epoch: await log.claimHolder(id, "r1") };
                const heard = hintFor(queue, id);
                await other.enqueue(id, prompt(id, `m${i}`));
                waits.push(await heard);
                assert.deepEqual(messages(await queue.take(id, holder)), [`m${i}`]);
              }
              keep();
              assert.ok(Math.max(...waits) < WAKE_MS, `waits ${waits.map(Math.round)}`);
            }),
        );

        await t.step(
          "a command whose hint was lost is found by the sweep within the deadline",
          () =>
            withQueue(async ({ log, queue, insertUnhinted }) => {
              await log.ensureSession(info("l"));
              const holder = { epoch: await log.claimHolder("l", "r1") };
              const heard = hintFor(queue, "l");
              await insertUnhinted("l", prompt("l", "quiet"));
              await heard;
              assert.deepEqual(messages(await queue.take("l", holder)), ["quiet"]);
            }),
        );

        await t.step(
          "pruning removes acknowledged commands before the bound, never pending ones",
          () =>
            withQueue(async ({ log, queue }) => {
              await log.ensureSession(info("p"));
              const holder = { epoch: await log.claimHolder("p", "r1") };
              for (const m of ["a", "b", "c"]) await queue.enqueue("p", prompt("p", m));
              await queue.take("p", holder);
              const start = Date.now();
              await queue.ack("p", holder, [1]);
              const acked = Date.now();
              const bound = await waitFor(() => Date.now() > acked ? Date.now() : 0, "the clock to move");
              await waitFor(() => Date.now() > bound, "the clock to move");
              await queue.ack("p", holder, [2]);
              assert.equal(await queue.prune(start), 0);
              assert.equal(await queue.prune(bound), 1, "only the one acknowledged before the bound");
              assert.equal(await queue.prune(Date.now() + 1), 1);
              assert.equal(await queue.unacknowledged("p"), 1);
              const next = { epoch: await log.claimHolder("p", "r2") };
              assert.deepEqual(messages(await queue.take("p", next)), ["c"]);
              assert.equal((await queue.enqueue("p", prompt("p", "d"))).pos, 4, "positions are never reused");
            }),
        );

        await t.step(
          "deleting a session removes its commands; a new one of that id starts at 1",
          () =>
            withQueue(async ({ log, queue }) => {
              await log.ensureSession(info("d"));
              await queue.enqueue("d", prompt("d", "old"));
              assert.equal(await log.deleteSession("d"), true);
              assert.equal(await queue.unacknowledged("d"), 0);
              await log.ensureSession(info("d"));
              assert.equal((await queue.enqueue("d", prompt("d", "new"))).pos, 1);
              assert.deepEqual(messages(await queue.take("d", { epoch: await log.claimHolder("d", "r") })), [
                "new",
              ]);
            }),
        );
        await more?.(t);
      } finally {
        await pg?.close();
        pg = null;
      }
    },
  });
}

contract("sqlite", openSqlite);
contract("postgres", () => openPostgres(), async (t) => {
  await t.step("a partitioned old holder's ack is refused after the takeover", () => partitionedAck(pg!));
  await t.step(
    "the LISTEN connection killed: the command still wakes the holder within the deadline",
    () => listenerKilled(false),
  );
  await t.step(
    "the LISTEN connection killed, no sweep: the queue listens again and hears hints",
    () => listenerKilled(true),
  );
  await t.step("a listener gone silent without a reset is replaced by the watchdog", () => deafListener());
  await t.step(
    "a database at schema version 1 gets the commands table; its sessions take commands",
    async () => {
      const url = await pg!.newDatabase();
      const sql = connectPostgres(url, { max: 1 });
      try {
        await migrate(sql, MIGRATIONS.slice(0, 1));
        await sql`INSERT INTO sessions(id, info) VALUES ('v1', '{}')`;
        assert.deepEqual((await migrate(sql)).applied, [2]);
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

/** The backends LISTENing on the database, once their LISTEN has finished. */
async function listeners(admin: postgres.Sql, db: string): Promise<number[]> {
  const rows = await admin`SELECT pid FROM pg_stat_activity
    WHERE datname = ${db} AND state = 'idle' AND query ILIKE 'listen%'`;
  return rows.map((r) => Number(r.pid));
}

async function listenerKilled(noSweep: boolean) {
  const url = await pg!.newDatabase();
  const db = new URL(url).pathname.slice(1);
  const admin = postgres(pg!.adminUrl, { max: 1, onnotice: () => {} });
  const o = await openPostgres(url, noSweep ? { sweepMs: 3_600_000 } : {});
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
  const url = await pg!.newDatabase();
  await using proxy = pausableProxy(pg!.port);
  const o = await openPostgres(url);
  // The first listener goes through a relay that will fall silent, as a dropped NAT or load balancer entry
  // does (no reset: the driver notices nothing); the ones after it connect directly.
  let built = 0;
  const queue = new PgCommandQueue(
    connectPostgres(url, { max: 2 }),
    () => connectPostgres(built++ ? url : url.replace(`:${pg!.port}/`, `:${proxy.port}/`), { max: 1 }),
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
