/**
 * One contract, two command queues: every case runs against the SQLite queue (a real file, beside the daemon's
 * Store and its event log) and the PostgreSQL queue (a real server from testing/postgres.ts, a fresh database
 * per case). `other` is a second queue object on the same database: another replica on PostgreSQL, another
 * part of the one daemon on SQLite. What only PostgreSQL has (its listener, partitions, migrations) is in
 * tests/process/command_queue_pg_test.ts.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { Store } from "../../lib/store.ts";
import { InvalidError, NotFoundError } from "../../lib/errors.ts";
import { FencedError } from "../../lib/storage/event_log.ts";
import { SqliteEventLog } from "../../lib/storage/sqlite_event_log.ts";
import { SqliteCommandQueue } from "../../lib/storage/sqlite_command_queue.ts";
import { contractTest, newDatabase, opening } from "../../testing/storage_replicas.ts";
import {
  hintFor,
  info,
  messages,
  type OpenedQueues,
  openPgQueues,
  prompt,
  WAKE_MS,
} from "../../testing/command_queue.ts";
import { waitFor } from "../../testing/daemon.ts";

async function openSqlite(): Promise<OpenedQueues> {
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

function contract(name: string, open: () => Promise<OpenedQueues>) {
  const withQueue = opening(open);
  contractTest(`command queue contract (${name})`, name, async (t) => {
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
  });
}

contract("sqlite", openSqlite);
contract("postgres", async () => openPgQueues(await newDatabase()));
