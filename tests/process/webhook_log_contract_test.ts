/**
 * One contract, two webhook logs: every case runs against the SQLite log (a real file under the daemon's
 * Store) and the PostgreSQL log (a real server from testing/postgres.ts, a fresh database per case). `other` is
 * a second log object on the same database: another replica on PostgreSQL, another part of the one daemon on
 * SQLite. Times are passed in, so leases and retries are tested without waiting for them. What only
 * PostgreSQL has (a claimant cut off by a partition, claims skipping locked rows) is in
 * tests/process/webhook_log_pg_test.ts.
 */
import assert from "node:assert/strict";
import { contractTest, newDatabase } from "../../testing/storage_replicas.ts";
import {
  delivery,
  endpoint,
  type OpenedLogs,
  type Opener,
  openPgLogs,
  openSqliteLogs,
  outcome,
} from "../../testing/webhook_log.ts";
import { DEFAULT_LEASE_MS, settleAttempt, type WebhookLog } from "../../lib/storage/webhook_log.ts";

const T0 = 1_700_000_000_000;

function contract(name: string, open: Opener) {
  const withLogs = (fn: (o: OpenedLogs) => Promise<void>, options = {}) => async () => {
    const opened = await open(options);
    try {
      await fn(opened);
    } finally {
      await opened.close();
    }
  };
  contractTest(`webhook log contract (${name})`, name, async (t) => {
    await t.step(
      "endpoints: listed without secrets, by kind; removed with what they had queued",
      withLogs(async ({ log, other }) => {
        await log.addEndpoint(endpoint("wh_a", ["run.settled", "run.failed"], T0));
        await other.addEndpoint(endpoint("wh_b", ["run.failed"], T0));
        await log.addEndpoint(endpoint("wh_c", ["session.lost"], T0 - 5));
        const listed = await other.list();
        assert.deepEqual(
          listed.map((e) => e.id),
          ["wh_c", "wh_a", "wh_b"],
          "oldest first, ties as added",
        );
        assert.ok(!JSON.stringify(listed).includes("whsec_"), "no secret in a list");
        assert.ok(listed.every((e) => !("secret" in e) && e.last === null));
        assert.deepEqual(listed[1].events, ["run.settled", "run.failed"]);
        assert.deepEqual(await log.subscribers("run.failed"), ["wh_a", "wh_b"]);
        assert.deepEqual(await log.subscribers("budget.reached"), []);
        assert.equal(await other.has("wh_a"), true);
        assert.equal(await other.has("wh_z"), false);

        assert.equal(
          await log.enqueue([
            delivery("m1", "wh_a", T0),
            delivery("m2", "wh_b", T0),
            delivery("m3", "wh_a", T0),
          ]),
          3,
        );
        assert.equal(await other.enqueue([delivery("m1", "wh_a", T0 + 9)]), 0, "an id is queued once");
        // One attempt of m1, failed: its row stays pending, and is what the endpoint's list entry shows.
        const [first] = await log.claimDue("r1", T0, 1);
        assert.equal(first.id, "m1");
        assert.equal(first.secret, endpoint("wh_a", [], 0).secret, "a claim carries the signing secret");
        assert.equal(first.url, "http://127.0.0.1:9/wh_a");
        assert.ok(await log.recordAttempt(first, outcome(false, T0), T0));
        const last = (await other.list()).find((e) => e.id === "wh_a")!.last;
        assert.deepEqual(last, {
          deliveryId: "m1",
          type: "run.settled",
          at: T0,
          status: 503,
          latencyMs: 5,
          error: "HTTP 503: busy",
          state: "pending",
        });

        assert.equal(await other.removeEndpoint("wh_a"), true);
        assert.equal(await log.removeEndpoint("wh_a"), false);
        assert.equal(await log.has("wh_a"), false);
        assert.equal(
          await log.enqueue([delivery("m4", "wh_a", T0)]),
          0,
          "a removed endpoint gets nothing",
        );
        // Its queue went with it: only wh_b's delivery is left to claim, and the log shows m1 as gone.
        const left = await other.claimDue("r2", T0 + 3_600_000, 10);
        assert.deepEqual(left.map((d) => d.id), ["m2"]);
        assert.equal((await log.log("wh_a"))[0].state, "gone");
        assert.equal(await log.recordAttempt(first, outcome(true, T0), T0), null, "m1 is gone");
      }),
    );

    await t.step(
      "200 deliveries, two replicas claiming at once: each claimed and delivered exactly once",
      withLogs(async ({ log, other }) => {
        await log.addEndpoint(endpoint("wh_a", ["run.settled"], T0));
        await log.addEndpoint(endpoint("wh_b", ["run.settled"], T0));
        const ids: string[] = [];
        for (let batch = 0; batch < 20; batch++) {
          const rows = Array.from({ length: 10 }, (_, i) => {
            const n = batch * 10 + i;
            return delivery(`d${n}`, n % 2 ? "wh_a" : "wh_b", T0 + batch);
          });
          ids.push(...rows.map((r) => r.id));
          await (batch % 2 ? log : other).enqueue(rows);
        }
        const claims = new Map<string, string[]>();
        const worker = async (replica: string, wl: WebhookLog) => {
          const mine: string[] = [];
          for (;;) {
            const got = await wl.claimDue(replica, T0 + 1000, 7);
            if (!got.length) break;
            for (const c of got) {
              mine.push(c.id);
              claims.set(c.id, [...(claims.get(c.id) ?? []), replica]);
            }
            const settled = await Promise.all(
              got.map((c) => wl.recordAttempt(c, outcome(true, T0 + 1000), T0 + 1000)),
            );
            assert.ok(settled.every((s) => s?.state === "delivered"), `${replica}'s results stored`);
          }
          return mine;
        };
        const [a, b] = await Promise.all([worker("A", log), worker("B", other)]);
        const doubled = [...claims].filter(([, who]) => who.length > 1);
        assert.deepEqual(doubled, [], "no delivery claimed twice");
        assert.deepEqual([...claims.keys()].sort(), [...ids].sort(), "none left unclaimed");
        assert.equal(a.length + b.length, 200);
        assert.ok(a.length > 0 && b.length > 0, `both replicas worked (${a.length} + ${b.length})`);
        assert.deepEqual(
          await log.claimDue("C", T0 + 10 * DEFAULT_LEASE_MS, 10),
          [],
          "delivered stays done",
        );
        assert.equal(await other.nextDue(), null);
        const attempts = [...await log.log("wh_a", 500), ...await other.log("wh_b", 500)];
        assert.equal(attempts.length, 200, "one attempt each");
        assert.ok(attempts.every((r) => r.state === "delivered"));
      }),
    );

    await t.step(
      "an expired lease is claimed again; the first claimant's late result is refused",
      withLogs(async ({ log, other }) => {
        await log.addEndpoint(endpoint("wh_a", ["run.settled"], T0));
        await log.enqueue([delivery("x", "wh_a", T0), delivery("y", "wh_a", T0 + 1)]);
        const [x] = await log.claimDue("A", T0, 1);
        assert.deepEqual([x.id, x.replica, x.leaseUntil], ["x", "A", T0 + DEFAULT_LEASE_MS]);
        // While A's lease runs, B is handed the other delivery only.
        const during = await other.claimDue("B", T0 + DEFAULT_LEASE_MS - 1, 10);
        assert.deepEqual(during.map((d) => d.id), ["y"]);
        assert.equal(await other.nextDue(), T0 + DEFAULT_LEASE_MS, "x is claimable when A's lease ends");
        const [again] = await other.claimDue("B", T0 + DEFAULT_LEASE_MS, 10);
        assert.equal(again.id, "x");
        assert.ok(again.claim > x.claim);
        assert.equal(await log.recordAttempt(x, outcome(true, T0 + 5), T0 + DEFAULT_LEASE_MS + 1), null);
        assert.equal(
          (await other.recordAttempt(again, outcome(true, T0 + 6), T0 + 7))?.state,
          "delivered",
        );
        assert.equal(
          await other.recordAttempt(again, outcome(true, T0 + 6), T0 + 7),
          null,
          "recorded once",
        );
        assert.deepEqual((await log.log("wh_a")).filter((r) => r.deliveryId === "x").length, 1);
        // Late, but nobody took y again: B's answer is kept (refusing it would only send a repeat).
        assert.equal(
          (await log.recordAttempt(during[0], outcome(true, T0), T0 + 3 * DEFAULT_LEASE_MS))?.state,
          "delivered",
        );
        assert.equal(await log.nextDue(), null);
      }),
    );

    await t.step(
      "a failure schedules the retry by the backoff, and gives up past the deadline",
      withLogs(async ({ log, other }) => {
        const policy = { firstRetryMs: 1000, maxRetryMs: 4000, giveUpMs: 10_000 };
        await log.addEndpoint(endpoint("wh_a", ["run.settled"], T0));
        await log.enqueue([delivery("r", "wh_a", T0)]);
        const states: string[] = [];
        let now = T0;
        for (const [i, replica] of [log, other, log, other].entries()) {
          assert.deepEqual(
            await replica.claimDue("early", now - 1, 5),
            [],
            `attempt ${i + 1} not due early`,
          );
          const [c] = await replica.claimDue(`r${i}`, now, 5);
          assert.equal(c.attempts, i);
          const expected = settleAttempt(c, false, now + 2, policy);
          const settled = await replica.recordAttempt(c, outcome(false, now), now + 2);
          assert.deepEqual(settled, expected);
          states.push(settled!.state);
          assert.equal(await log.nextDue(), settled!.state === "pending" ? settled!.nextAt : null);
          now = settled!.nextAt;
        }
        // 1 s, 2 s, 4 s, then 4 s (capped) would pass 10 s after the event: given up.
        assert.deepEqual(states, ["pending", "pending", "pending", "failed"]);
        assert.equal(now, T0 + 2 + 1000 + 2 + 2000 + 2 + 4000 + 2 + 4000);
        const history = await other.log("wh_a");
        assert.equal(history.length, 4);
        assert.ok(history.every((r) => r.state === "failed"));
        assert.deepEqual(await other.claimDue("late", now + 1e9, 5), []);
      }, { retry: { firstRetryMs: 1000, maxRetryMs: 4000, giveUpMs: 10_000 } }),
    );

    await t.step(
      "everything survives closing and opening again (a restart)",
      withLogs(async (o) => {
        await o.log.addEndpoint(endpoint("wh_a", ["run.settled"], T0));
        await o.log.enqueue([delivery("p", "wh_a", T0), delivery("q", "wh_a", T0 + 1)]);
        const [p] = await o.log.claimDue("A", T0, 1);
        await o.log.recordAttempt(p, outcome(false, T0), T0);
        const [q] = await o.other.claimDue("B", T0 + 1, 1);
        assert.equal(q.id, "q");
        const before = await o.log.list();
        await o.reopen();
        assert.deepEqual(await o.other.list(), before);
        assert.equal((await o.log.log("wh_a"))[0].deliveryId, "p");
        // A claim made before the restart: on SQLite its process is gone with it (the daemon owns the file),
        // so the delivery goes out at once; on PostgreSQL other replicas may still hold theirs until the lease.
        const sqlite = o.log.kind === "sqlite";
        const soon = await o.log.claimDue("C", T0 + 1, 5);
        assert.deepEqual(soon.map((d) => d.id), sqlite ? ["q"] : []);
        const after = await o.other.claimDue("D", T0 + 1 + DEFAULT_LEASE_MS, 5);
        // C's claim of q (SQLite) has run out by then too.
        assert.deepEqual(after.map((d) => d.id).sort(), ["p", "q"]);
        assert.equal(
          await o.other.recordAttempt(q, outcome(true, T0), T0 + 2),
          null,
          "the old claim is over",
        );
        assert.ok(after.every((d) => d.secret === endpoint("wh_a", [], 0).secret));
      }),
    );
  });
}

contract("sqlite", openSqliteLogs);
contract("postgres", async (options) => openPgLogs(await newDatabase(), options));
