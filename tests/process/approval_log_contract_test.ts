/**
 * One contract, two approval logs: every case runs against the SQLite log (a real file under the daemon's
 * Store) and the PostgreSQL log (a real server from testing/postgres.ts, a fresh database per case). `other`
 * is a second log object on the same database: another replica on PostgreSQL, another part of the one daemon
 * on SQLite. What only PostgreSQL has (a decider held on the row lock or cut off by a partition) is in
 * tests/process/approval_log_pg_test.ts.
 */
import assert from "node:assert/strict";
import { NotFoundError } from "../../lib/errors.ts";
import { contractTest, newDatabase, opening } from "../../testing/storage_replicas.ts";
import {
  type AnyLogs,
  HINT_MS,
  hintFor,
  openPgLogs,
  openSqliteLogs,
  request,
} from "../../testing/approval_log.ts";

function contract(name: string, open: () => Promise<AnyLogs>) {
  const withLogs = opening(open);
  contractTest(`approval log contract (${name})`, name, async (t) => {
    await t.step(
      "a request sent twice, on two replicas at once, is stored once and kept as first stored",
      () =>
        withLogs(async ({ log, other }) => {
          const first = request("a1", "s", 1_000);
          const inserted = await Promise.all([log.insert(first), other.insert(first)]);
          assert.deepEqual(inserted.sort(), [false, true]);
          assert.equal(await log.insert({ ...first, args: { changed: true }, createdAt: 9 }), false);
          const stored = await other.get("a1");
          assert.deepEqual(stored, {
            ...first,
            state: "pending",
            decidedBy: null,
            decidedAt: null,
            reason: null,
            appliedAt: null,
            source: null,
          });
          assert.equal("kind" in stored!, false, "a tool call has no kind");
          assert.equal(await log.get("nobody"), null);
          assert.equal((await log.pending()).length, 1);
        }),
    );

    await t.step(
      "20 rounds of two replicas deciding at once: one wins, both read the winner",
      () =>
        withLogs(async ({ log, other }) => {
          const winners = { approved: 0, rejected: 0 };
          for (let i = 0; i < 20; i++) {
            const id = `r${i}`;
            await log.insert(request(id, "s", 1_000 + i));
            // Alternate who goes first so neither log is always the one whose statement leaves first.
            const [a, b] = i % 2 ? [log, other] : [other, log];
            const [yes, no] = await Promise.all([
              a.decide(id, "approved", "alice", null),
              b.decide(id, "rejected", "bob", "too risky"),
            ]);
            assert.equal(Number(yes.won) + Number(no.won), 1, `round ${i}: exactly one wins`);
            const winner = yes.won ? yes.approval : no.approval;
            winners[winner.state as "approved" | "rejected"]++;
            assert.deepEqual(
              yes.approval,
              no.approval,
              `round ${i}: the loser is handed the winner's row`,
            );
            assert.deepEqual(await log.get(id), winner);
            assert.deepEqual(await other.get(id), winner);
            assert.equal(winner.decidedBy, winner.state === "approved" ? "alice" : "bob");
            assert.equal(winner.reason, winner.state === "approved" ? null : "too risky");
            assert.equal(typeof winner.decidedAt, "number");
          }
          assert.equal(winners.approved + winners.rejected, 20);
          assert.deepEqual(await other.pending(), []);
          await assert.rejects(log.decide("nobody", "approved", "alice", null), NotFoundError);
        }),
    );

    await t.step(
      "once applied the answer stays: decide refused, applied once, overrule corrects it",
      () =>
        withLogs(async ({ log, other }) => {
          await log.insert(request("p", "s", 1_000));
          assert.equal((await log.decide("p", "approved", "alice", null)).won, true);
          assert.equal(await other.applied("p", "web"), true);
          assert.equal(await log.applied("p", "terminal"), false, "applied is recorded once");
          const late = await other.decide("p", "rejected", "bob", null);
          assert.equal(late.won, false);
          assert.equal(late.approval.state, "approved");
          assert.equal(late.approval.source, "web");
          assert.equal(typeof late.approval.appliedAt, "number");
          // The terminal's answer reached pi first: the record is corrected to what ran.
          await other.overrule("p", "rejected", "terminal user");
          const fixed = await log.get("p");
          assert.deepEqual([fixed?.state, fixed?.decidedBy, fixed?.reason], [
            "rejected",
            "terminal user",
            null,
          ]);
          assert.equal(fixed?.source, "web");
        }),
    );

    await t.step(
      "pending list per session, oldest first; a deleted session's approvals go",
      () =>
        withLogs(async ({ log, other }) => {
          await log.insert(request("b2", "s1", 2_000));
          await other.insert(request("b1", "s1", 1_000));
          await log.insert(request("c1", "s2", 1_500));
          await other.insert(request("b3", "s1", 3_000));
          // Equal times sort by id, alike on both stores.
          await log.insert(request("b0", "s1", 3_000));
          await other.decide("b2", "cancelled", "session ended", null);
          const ids = (list: { id: string }[]) => list.map((a) => a.id);
          assert.deepEqual(ids(await log.list({ sessionId: "s1", state: "pending" })), [
            "b1",
            "b0",
            "b3",
          ]);
          assert.deepEqual(ids(await log.list({ sessionId: "s2", state: "pending" })), ["c1"]);
          assert.deepEqual(ids(await other.list({ sessionId: "s1" })), ["b1", "b2", "b0", "b3"]);
          assert.deepEqual(ids(await other.list({ state: "cancelled" })), ["b2"]);
          assert.deepEqual(ids(await other.list()), ["b1", "c1", "b2", "b0", "b3"]);
          assert.deepEqual(ids(await log.pending()), ["b1", "c1", "b0", "b3"]);
          await other.deleteSession("s1");
          assert.deepEqual(ids(await log.list()), ["c1"]);
          assert.equal(await log.get("b1"), null);
        }),
    );

    await t.step(
      "a budget card keeps its kind; its raise is stored with the decision or not at all",
      () =>
        withLogs(async ({ log, other, raise, failingRaise, raised }) => {
          await log.insert(
            request("card", "s", 1_000, { kind: "budget", toolName: "budget", args: null }),
          );
          assert.equal((await other.get("card"))?.kind, "budget");
          assert.equal((await other.pending())[0].kind, "budget");
          await assert.rejects(
            other.decide("card", "approved", "alice", null, failingRaise("s")),
            /raise failed/,
          );
          assert.equal(
            (await log.get("card"))?.state,
            "pending",
            "a failed raise leaves the card waiting",
          );
          assert.equal(await raised("s"), 0);
          const won = await other.decide("card", "approved", "alice", null, raise("s"));
          assert.equal(won.won, true);
          assert.equal(won.approval.kind, "budget");
          assert.equal(await raised("s"), 1);
          // A loser's writes are not run: the card was raised once.
          assert.equal((await log.decide("card", "approved", "bob", null, raise("s"))).won, false);
          assert.equal(await raised("s"), 1);
        }),
    );

    await t.step(
      "everything survives closing and opening again (a restart)",
      () =>
        withLogs(async (o) => {
          await o.log.insert(request("k1", "s", 1_000, { kind: "budget" }));
          await o.log.insert(request("k2", "s", 2_000));
          await o.log.insert(request("k3", "t", 3_000));
          await o.other.decide("k2", "rejected", "bob", "no");
          await o.log.applied("k2", "web");
          const before = await o.log.list();
          await o.reopen();
          assert.deepEqual(await o.other.list(), before);
          assert.deepEqual((await o.log.pending()).map((a) => a.id), ["k1", "k3"]);
          assert.equal((await o.log.get("k1"))?.kind, "budget");
          assert.equal(await o.log.insert(request("k2", "s", 5_000)), false, "the id is still taken");
          assert.equal((await o.other.decide("k1", "approved", "alice", null)).won, true);
        }),
    );

    await t.step(
      `a change on one replica reaches the other's subscribers within ${HINT_MS} ms`,
      () =>
        withLogs(async ({ log, other }) => {
          const keep = other.subscribe(() => {});
          // The first hint also proves the listener is in place.
          const warm = hintFor(other, "warm", 5_000);
          await log.insert(request("w", "warm", 1));
          await warm;
          const waits: number[] = [];
          for (let i = 0; i < 5; i++) {
            const sessionId = `h${i}`;
            let heard = hintFor(other, sessionId);
            await log.insert(request(`q${i}`, sessionId, 10 + i));
            waits.push(await heard);
            heard = hintFor(other, sessionId);
            await log.decide(`q${i}`, "approved", "alice", null);
            waits.push(await heard);
          }
          keep();
          assert.ok(Math.max(...waits) < HINT_MS, `waits ${waits.map(Math.round)}`);
        }),
    );

    await t.step(
      "a change whose hint was lost is found by the sweep within the deadline",
      () =>
        withLogs(async ({ log, insertUnhinted }) => {
          const keep = log.subscribe(() => {});
          // Let one sweep take its first look, so the next one finds the new row as a change.
          const warm = hintFor(log, "warm", 5_000);
          await log.insert(request("w", "warm", 1));
          await warm;
          const heard = hintFor(log, "quiet", 2 * HINT_MS);
          await insertUnhinted(request("u", "quiet", 2));
          await heard;
          keep();
          assert.deepEqual((await log.pending()).map((a) => a.id), ["w", "u"]);
        }),
    );
  });
}

contract("sqlite", openSqliteLogs);
contract("postgres", async () => openPgLogs(await newDatabase()));
