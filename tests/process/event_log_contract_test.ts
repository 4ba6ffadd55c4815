/**
 * One contract, two event logs: every case runs against the SQLite log (a real file, through the daemon's
 * Store) and the PostgreSQL log (a real server started by testing/postgres.ts, a fresh database per case).
 */
import assert from "node:assert/strict";
import type { AgentEvent, SessionInfo } from "../../lib/protocol.ts";
import { Store } from "../../lib/store.ts";
import { ConflictError, NotFoundError } from "../../lib/errors.ts";
import { type EventLog, FencedError } from "../../lib/storage/event_log.ts";
import { SqliteEventLog } from "../../lib/storage/sqlite_event_log.ts";
import { PgEventLog } from "../../lib/storage/pg_event_log.ts";
import { pausableProxy } from "../../testing/pausable_proxy.ts";
import { type Postgres, postgresBinDir, startPostgres } from "../../testing/postgres.ts";
import { sessionInfo } from "../../testing/agent.ts";

const info = (id: string) => sessionInfo(id) as SessionInfo;
const ev = (sessionId: string, seq: number, type = "agent_start", extra = {}) =>
  ({ v: 1, sessionId, seq, ts: 1_000 + seq, type, ...extra }) as AgentEvent;
const note = (sessionId: string, text: string) =>
  ({ v: 1, sessionId, seq: 0, ts: 5_000, type: "session_notice", text }) as unknown as AgentEvent;

/** An opened log under test: `other` is a second writer on a connection of its own where the database has them. */
interface Opened {
  log: EventLog;
  other: EventLog;
  close(): Promise<void>;
}

interface Implementation {
  name: string;
  open(): Promise<Opened>;
  start(): Promise<void>;
  stop(): Promise<void>;
}

let pg: Postgres | null = null;
const HAVE_POSTGRES = (await postgresBinDir()) !== null;

const sqlite: Implementation = {
  name: "sqlite",
  start: () => Promise.resolve(),
  stop: () => Promise.resolve(),
  async open() {
    const dir = await Deno.makeTempDir({ prefix: "lvmh-eventlog-" });
    const store = new Store(`${dir}/lvmh.db`);
    const log = new SqliteEventLog(store);
    // One daemon per SQLite file: its writers share the one log (and its one connection).
    return {
      log,
      other: log,
      async close() {
        store.close();
        await Deno.remove(dir, { recursive: true });
      },
    };
  },
};

const postgresImpl: Implementation = {
  name: "postgres",
  async start() {
    pg = await startPostgres();
  },
  async stop() {
    await pg?.close();
    pg = null;
  },
  async open() {
    const url = await pg!.newDatabase();
    const log = await PgEventLog.open(url, { max: 2 });
    const other = await PgEventLog.open(url, { max: 2 });
    return {
      log,
      other,
      async close() {
        await log.close();
        await other.close();
      },
    };
  },
};

async function withLog(impl: Implementation, fn: (o: Opened) => Promise<void>): Promise<void> {
  const opened = await impl.open();
  try {
    await fn(opened);
  } finally {
    await opened.close();
  }
}

/** The contract's cases, then `more` (what only this database has) on the same server. */
function contract(impl: Implementation, more?: (t: Deno.TestContext) => Promise<void>) {
  Deno.test({
    name: `event log contract (${impl.name})`,
    ignore: impl === postgresImpl && !HAVE_POSTGRES,
    fn: async (t) => {
      await impl.start();
      try {
        await t.step(
          "append keeps the plugin's seqs, numbers seq 0 from the counter, pages both ways",
          () =>
            withLog(impl, async ({ log }) => {
              await log.ensureSession(info("a"));
              const epoch = await log.claimHolder("a", "r1");
              const first = await log.append("a", [ev("a", 1), ev("a", 2, "message_end", { message: {} })], {
                epoch,
              });
              assert.equal(first.after, 0);
              assert.equal(first.lastSeq, 2);
              assert.deepEqual(first.inserted.map((e) => e.seq), [1, 2]);
              const numbered = await log.append("a", [note("a", "x"), note("a", "y")], { epoch });
              assert.deepEqual(numbered.inserted.map((e) => e.seq), [3, 4]);
              assert.equal(numbered.after, 2);
              assert.equal(numbered.lastSeq, 4);
              assert.equal(JSON.parse(numbered.inserted[1].json).text, "y");
              assert.equal(numbered.inserted[1].event?.seq, 4);
              const all = await log.events("a", { after: 0, limit: 10 });
              assert.deepEqual(all.map((r) => [r.seq, r.type]), [
                [1, "agent_start"],
                [2, "message_end"],
                [3, "session_notice"],
                [4, "session_notice"],
              ]);
              assert.deepEqual((await log.events("a", { after: 1, limit: 2 })).map((r) => r.seq), [2, 3]);
              assert.deepEqual((await log.events("a", { after: 0, before: 4, limit: 2 })).map((r) => r.seq), [
                2,
                3,
              ]);
              assert.equal(await log.lastSeq("a"), 4);
              assert.equal(await log.lastSeq("nobody"), 0);
            }),
        );

        await t.step(
          "a replayed seq is left out and the first write wins",
          () =>
            withLog(impl, async ({ log }) => {
              await log.ensureSession(info("a"));
              const epoch = await log.claimHolder("a", "r1");
              await log.append("a", [ev("a", 1), ev("a", 2)], { epoch });
              const replay = await log.append("a", [ev("a", 2, "bye"), ev("a", 3, "agent_end")], { epoch });
              assert.equal(replay.after, 2);
              assert.deepEqual(replay.inserted.map((e) => e.seq), [3]);
              const again = await log.append("a", [ev("a", 3, "bye")], { epoch });
              assert.deepEqual(again.inserted, []);
              assert.equal(again.lastSeq, 3);
              assert.deepEqual((await log.events("a", { after: 0, limit: 10 })).map((r) => r.type), [
                "agent_start",
                "agent_start",
                "agent_end",
              ]);
            }),
        );

        await t.step(
          "infoChanged follows the running state and session_info, as the SQLite store does",
          () =>
            withLog(impl, async ({ log }) => {
              await log.ensureSession(info("a"));
              const epoch = await log.claimHolder("a", "r1");
              const flags = [];
              for (
                const [seq, type, extra] of [
                  [1, "agent_start", {}],
                  [2, "message_end", { message: {} }],
                  [3, "agent_end", {}],
                  [4, "session_info", { session: { ...info("a"), name: "renamed" } }],
                ] as const
              ) {
                flags.push((await log.append("a", [ev("a", seq, type, extra)], { epoch })).infoChanged);
              }
              assert.deepEqual(flags, [true, false, true, true]);
            }),
        );

        await t.step(
          "within one batch: the state moves event by event, a replay counts for nothing",
          () =>
            withLog(impl, async ({ log }) => {
              await log.ensureSession(info("a"));
              const epoch = await log.claimHolder("a", "r1");
              const at = (seq: number, type: string, ts: number) => ({ ...ev("a", seq, type), ts });
              const append = async (...events: AgentEvent[]) => (await log.append("a", events, { epoch }));
              // Running and idle again: changed, though it ends as it began; the latest ts is the highest.
              const run = [at(1, "agent_start", 1001), at(2, "message_end", 1050), at(3, "agent_end", 1003)];
              assert.equal((await append(...run)).infoChanged, true);
              assert.equal((await append(at(4, "agent_end", 1004))).infoChanged, false, "idle after the run");
              // A replayed seq (4) with a later ts is left out; the new agent_start counts.
              const mixed = await append(at(4, "agent_end", 9999), at(5, "agent_start", 1005));
              assert.deepEqual([mixed.inserted.length, mixed.infoChanged], [1, true]);
              assert.equal((await append(at(6, "agent_start", 1006))).infoChanged, false, "running");
              assert.equal((await log.sessions())[0].lastEventAt, 1050);
            }),
        );

        await t.step(
          "two appenders on two connections: no gap, no repeat, a follower never skips a row",
          () =>
            withLog(impl, async ({ log, other }) => {
              await log.ensureSession(info("c"));
              const epoch = await log.claimHolder("c", "r1");
              const ROUNDS = 40;
              const PER = 5;
              const writer = async (target: EventLog, name: string) => {
                for (let round = 0; round < ROUNDS; round++) {
                  const batch = Array.from(
                    { length: PER },
                    (_, i) => note("c", `${name}:${round * PER + i}`),
                  );
                  await target.append("c", batch, { epoch });
                }
              };
              let doneAt = 0;
              const seen: number[] = [];
              const follower = (async () => {
                let cursor = 0;
                while (!doneAt || cursor < ROUNDS * PER * 2) {
                  if (doneAt && Date.now() - doneAt > 5_000) {
                    assert.fail(`follower stuck at ${cursor}`);
                  }
                  const page = await log.events("c", { after: cursor, limit: 1000 });
                  page.forEach((row, i) => {
                    // A row below one already read, or a hole, would be a skip for a `seq > cursor` reader.
                    assert.equal(
                      row.seq,
                      cursor + 1 + i,
                      `follower at ${cursor} read ${page.map((r) => r.seq)}`,
                    );
                  });
                  for (const row of page) seen.push(row.seq);
                  if (page.length) cursor = page.at(-1)!.seq;
                  else await new Promise((r) => setTimeout(r, 1));
                }
              })();
              await Promise.all([writer(log, "a"), writer(other, "b")]);
              doneAt = Date.now();
              await follower;
              const rows = await log.events("c", { after: 0, limit: 1000 });
              assert.deepEqual(
                rows.map((r) => r.seq),
                Array.from({ length: ROUNDS * PER * 2 }, (_, i) => i + 1),
              );
              assert.deepEqual(seen, rows.map((r) => r.seq));
              for (const name of ["a", "b"]) {
                const mine = rows.map((r) => JSON.parse(r.payload).text as string).filter((t) =>
                  t.startsWith(name)
                );
                assert.deepEqual(mine, Array.from({ length: ROUNDS * PER }, (_, i) => `${name}:${i}`));
              }
              assert.equal(await other.lastSeq("c"), ROUNDS * PER * 2);
            }),
        );

        await t.step(
          "a newer holder fences the older one: its appends fail and store nothing",
          () =>
            withLog(impl, async ({ log, other }) => {
              await log.ensureSession(info("f"));
              assert.equal(await log.claimHolder("f", "a"), 1);
              await log.append("f", [ev("f", 1)], { epoch: 1 });
              const newer = await other.claimHolder("f", "b");
              assert.equal(newer, 2);
              await assert.rejects(
                log.append("f", [ev("f", 2, "agent_end")], { epoch: 1 }),
                (e: unknown) =>
                  e instanceof FencedError && e instanceof ConflictError && e.current === 2 &&
                  /newer holder \(epoch 2\)/.test(e.message),
              );
              assert.equal(await log.lastSeq("f"), 1);
              const b = await other.append("f", [ev("f", 2, "bye")], { epoch: newer });
              assert.deepEqual(b.inserted.map((e) => e.seq), [2]);
              await assert.rejects(log.append("f", [], { epoch: 1 }), FencedError);
              await assert.rejects(log.claimHolder("nobody", "a"), NotFoundError);
            }),
        );

        await t.step(
          "delete removes the session and its log; appends to it then fail",
          () =>
            withLog(impl, async ({ log }) => {
              for (const id of ["d", "k"]) {
                await log.ensureSession(info(id));
                await log.append(id, [ev(id, 1), ev(id, 2)], { epoch: 0 });
              }
              assert.deepEqual((await log.sessions()).map((s) => s.id).sort(), ["d", "k"]);
              assert.equal(await log.deleteSession("d"), true);
              assert.equal(await log.deleteSession("d"), false);
              assert.deepEqual(await log.events("d", { after: 0, limit: 10 }), []);
              assert.equal(await log.lastSeq("d"), 0);
              assert.deepEqual((await log.sessions()).map((s) => s.id), ["k"]);
              assert.equal((await log.events("k", { after: 0, limit: 10 })).length, 2);
              await assert.rejects(log.append("d", [ev("d", 3)], { epoch: 0 }), NotFoundError);
            }),
        );

        await t.step(
          "64-bit seqs and ms timestamps come back as the same numbers",
          () =>
            withLog(impl, async ({ log }) => {
              await log.ensureSession(info("b"));
              const big = 2 ** 40 + 7;
              const ts = 1_764_000_000_123;
              await log.append("b", [{ ...ev("b", big), ts: ts + 0.9 } as AgentEvent], { epoch: 0 });
              const near = Number.MAX_SAFE_INTEGER - 1;
              await log.append("b", [{ ...ev("b", near), ts } as AgentEvent], { epoch: 0 });
              const last = await log.append("b", [note("b", "top")], { epoch: 0 });
              assert.equal(last.lastSeq, Number.MAX_SAFE_INTEGER);
              const rows = await log.events("b", { after: 0, limit: 10 });
              assert.deepEqual(rows.map((r) => r.seq), [big, near, Number.MAX_SAFE_INTEGER]);
              assert.equal(rows[0].ts, ts);
              assert.equal(typeof rows[0].seq, "number");
              assert.equal(await log.lastSeq("b"), Number.MAX_SAFE_INTEGER);
              const [listed] = await log.sessions();
              assert.equal(listed.lastSeq, Number.MAX_SAFE_INTEGER);
              assert.equal(listed.lastEventAt, ts);
            }),
        );

        await t.step(
          "sessions() lists the most recent activity first",
          () =>
            withLog(impl, async ({ log }) => {
              for (const [id, ts] of [["x", 3_000], ["y", 9_000], ["z", 6_000]] as const) {
                await log.ensureSession(info(id));
                await log.append(id, [{ ...ev(id, 1), ts } as AgentEvent], { epoch: 0 });
              }
              await log.ensureSession(info("quiet"));
              assert.deepEqual((await log.sessions()).map((s) => [s.id, s.lastEventAt]), [
                ["y", 9_000],
                ["z", 6_000],
                ["x", 3_000],
                ["quiet", null],
              ]);
            }),
        );
        await more?.(t);
      } finally {
        await impl.stop();
      }
    },
  });
}

contract(sqlite);
contract(postgresImpl, async (t) => {
  await t.step("a partitioned old holder cannot write after the takeover", () => partitionedHolder(pg!));
});

async function partitionedHolder(server: Postgres) {
  const url = await server.newDatabase();
  await using proxy = pausableProxy(server.port);
  const a = await PgEventLog.open(url.replace(`:${server.port}/`, `:${proxy.port}/`), { max: 1 });
  const b = await PgEventLog.open(url, { max: 1 });
  try {
    await a.ensureSession(info("p"));
    const epochA = await a.claimHolder("p", "replica-a");
    await a.append("p", [ev("p", 1), ev("p", 2)], { epoch: epochA });
    // A loses the database: its next batch is on the wire but the server does not see it yet.
    proxy.pause();
    const late = a.append("p", [ev("p", 3, "message_end", { message: {} })], { epoch: epochA });
    const outcome = late.then(() => "stored", (e) => e);
    const epochB = await b.claimHolder("p", "replica-b");
    assert.equal(epochB, epochA + 1);
    await b.append("p", [ev("p", 3, "agent_end")], { epoch: epochB });
    proxy.resume();
    const error = await outcome;
    assert.ok(error instanceof FencedError, `the old holder's append ended as ${error}`);
    assert.equal(error.current, epochB);
    const rows = await b.events("p", { after: 0, limit: 10 });
    assert.deepEqual(rows.map((r) => `${r.seq} ${r.type}`), [
      "1 agent_start",
      "2 agent_start",
      "3 agent_end",
    ]);
    // And once back, it stays fenced.
    await assert.rejects(a.append("p", [ev("p", 4)], { epoch: epochA }), FencedError);
  } finally {
    await a.close();
    await b.close();
  }
}
