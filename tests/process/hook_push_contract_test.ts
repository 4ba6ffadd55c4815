/**
 * One contract, two stores, for kept hook prompts and web push: every case runs against the SQLite logs (a real
 * file under the daemon's Store, with a second handle as the other replica) and the PostgreSQL logs (a real
 * server from testing/postgres.ts, a fresh database per case, each replica with pools of its own). What only
 * PostgreSQL has is in tests/process/hook_push_pg_test.ts.
 */
import assert from "node:assert/strict";
import { contractTest, newDatabase, opening } from "../../testing/storage_replicas.ts";
import { waitFor } from "../../testing/daemon.ts";
import {
  keptPrompt,
  openPgReplicas,
  openSqliteReplicas,
  type Replicas,
  subscription,
} from "../../testing/hook_push.ts";
import type { ClaimedPrompt } from "../../lib/storage/hook_prompt_log.ts";

/** Long enough that no lease runs out during a case unless the case means it to. */
const LONG = 60_000;

function contract(name: string, open: () => Promise<Replicas>) {
  const withReplicas = opening(open);
  contractTest(`hook prompt and push contract (${name})`, name, async (t) => {
    await t.step(
      "a kept prompt reads back alike on the other replica, oldest first",
      () =>
        withReplicas(async ({ a, b }) => {
          const spawn = { repo: "group/app", branch: null, ask: ["bash"] };
          const later = keptPrompt("p2", "s1", 2_000, { waitIdle: true });
          const first = keptPrompt("p1", "s2", 1_000, { spawn, deliverAs: "steer" });
          await a.prompts.keep(later);
          await b.prompts.keep(first);
          // Equal times sort by id, alike on both stores.
          await a.prompts.keep(keptPrompt("p0", "s1", 2_000));
          assert.deepEqual(await b.prompts.prompts(), [first, keptPrompt("p0", "s1", 2_000), later]);
          assert.equal("waitIdle" in (await a.prompts.prompts())[1], false, "no waitIdle unless set");
        }),
    );

    await t.step(
      "20 rounds of two replicas claiming at once: one claims, then answers, fails or releases",
      () =>
        withReplicas(async ({ a, b }) => {
          const tally = { A: 0, B: 0 };
          for (let i = 0; i < 20; i++) {
            const kept = keptPrompt(`r${i}`, "s", 1_000 + i);
            await a.prompts.keep(kept);
            // Alternate who goes first so neither replica's statement always leaves first.
            const [x, y] = i % 2 ? [a, b] : [b, a];
            const claims = await Promise.all([
              x.prompts.claim(x === a ? "A" : "B", LONG),
              y.prompts.claim(y === a ? "A" : "B", LONG),
            ]);
            const won = claims.filter((c): c is ClaimedPrompt => c !== null);
            assert.equal(won.length, 1, `round ${i}: exactly one claims`);
            const [{ prompt, lease }] = won;
            assert.deepEqual(prompt, kept);
            tally[lease.owner as "A" | "B"]++;
            const [mine, theirs] = lease.owner === "A" ? [a, b] : [b, a];
            assert.equal(
              await theirs.prompts.claim("late", LONG),
              null,
              `round ${i}: held, not claimable`,
            );
            assert.equal(await mine.prompts.claim("again", LONG), null, "held by its claimant as well");
            if (i % 3 === 0) assert.equal(await mine.prompts.answered(lease), true);
            if (i % 3 === 1) assert.equal(await mine.prompts.failed(lease), true);
            if (i % 3 === 2) {
              // Released (a shutdown, or the session is held elsewhere): the other replica goes on with it.
              assert.equal(await mine.prompts.release(lease), true);
              const next = await theirs.prompts.claim("other", LONG);
              assert.deepEqual(next?.prompt, kept);
              assert.notEqual(next?.lease.token, lease.token);
              assert.equal(await mine.prompts.answered(lease), false, "a released lease writes nothing");
              assert.equal(await theirs.prompts.answered(next!.lease), true);
            }
            assert.deepEqual(await b.prompts.prompts(), [], `round ${i}: the row went once`);
          }
          assert.equal(tally.A + tally.B, 20);
        }),
    );

    await t.step(
      "a claimant's writes: sent after the first seq, spawned, filters, keep frees the lease",
      () =>
        withReplicas(async ({ a, b }) => {
          const spawn = { repo: "group/app", branch: "main", ask: "all" as const };
          await a.prompts.keep(keptPrompt("x", "s1", 1_000, { spawn }));
          await a.prompts.keep(keptPrompt("y", "s2", 2_000));
          const y = await b.prompts.claim("B", LONG, { sessionId: "s2" });
          assert.equal(y?.prompt.id, "y");
          assert.equal(await a.prompts.claim("A", LONG, { id: "y" }), null);
          const x = await a.prompts.claim("A", LONG, { id: "x" });
          assert.equal(x?.prompt.id, "x");
          assert.equal(await a.prompts.markSpawned(x!.lease), true);
          assert.equal(await a.prompts.markSent(x!.lease, 41), true);
          assert.equal(await a.prompts.markSent(x!.lease, 99), true, "a later send keeps the first seq");
          assert.equal(await b.prompts.renew(y!.lease, LONG), true);
          const stored = (await b.prompts.prompts()).find((p) => p.id === "x");
          assert.deepEqual([stored?.spawn, stored?.sentAfter], [null, 41]);
          // Kept again (the send to an old plugin threw after `answered`): free for anyone at once.
          assert.equal(await b.prompts.answered(y!.lease), true);
          await b.prompts.keep(y!.prompt);
          assert.equal((await a.prompts.claim("A", LONG))?.prompt.id, "y");
          assert.equal(await b.prompts.take("x"), true, "dropped (too old) whoever holds it");
          assert.equal(await a.prompts.take("x"), false);
          assert.equal(await a.prompts.markSent(x!.lease, 5), false, "its row is gone");
        }),
    );

    await t.step(
      "an expired lease is claimed again and the old claimant's late writes are refused",
      () =>
        withReplicas(async ({ a, b }) => {
          const kept = keptPrompt("k", "s", 1_000);
          await a.prompts.keep(kept);
          // A claims for a moment and then stops renewing (SIGKILLed, or stalled).
          const old = await a.prompts.claim("A", 200);
          assert.ok(old);
          assert.equal(await b.prompts.claim("B", LONG), null, "a live lease holds");
          const taken = await waitFor(() => b.prompts.claim("B", LONG), "the lease to run out", 5_000);
          assert.deepEqual(taken.prompt, kept);
          for (const late of [a.prompts.answered, a.prompts.failed, a.prompts.release, a.prompts.renew]) {
            assert.equal(await late.call(a.prompts, old.lease), false, `late ${late.name} refused`);
          }
          assert.equal(await a.prompts.markSent(old.lease, 3), false);
          assert.equal(await a.prompts.markSpawned(old.lease), false);
          assert.deepEqual(await a.prompts.prompts(), [kept], "the late claimant changed nothing");
          assert.equal(await b.prompts.failed(taken.lease), true, "the failure is recorded once, by B");
          assert.deepEqual(await a.prompts.prompts(), []);
        }),
    );

    await t.step(
      "a retried hook's delivery key and its spawn's prompt are kept once across replicas",
      () =>
        withReplicas(async ({ a, b }) => {
          const keys = await Promise.all([
            a.prompts.claimDelivery("gitlab", "d1"),
            b.prompts.claimDelivery("gitlab", "d1"),
          ]);
          assert.deepEqual(keys.sort(), [false, true]);
          const spawn = { repo: "group/app", branch: null, ask: ["bash"] };
          const first = keptPrompt("sp1", "new-1", 5_000, { spawn, deliverAs: "steer" });
          const second = keptPrompt("sp2", "new-2", 5_000, { spawn, deliverAs: "steer" });
          const both = await Promise.all([
            a.prompts.keepSpawn("gitlab", "d2", first),
            b.prompts.keepSpawn("gitlab", "d2", second),
          ]);
          const fresh = both.filter((r) => !r.duplicate);
          assert.equal(fresh.length, 1, "one spawn for the key");
          assert.deepEqual(both.map((r) => r.sessionId), [fresh[0].sessionId, fresh[0].sessionId]);
          const kept = await a.prompts.prompts();
          assert.deepEqual(kept.map((p) => p.sessionId), [fresh[0].sessionId]);
        }),
    );

    await t.step(
      "the VAPID pair made by two replicas at once is one pair, kept from then on",
      () =>
        withReplicas(async (r) => {
          let made = 0;
          const make = () => {
            made++;
            return { publicKey: `pub-${made}`, privateKey: `priv-${made}` };
          };
          const [ka, kb] = await Promise.all([r.a.push.vapidKeys(make), r.b.push.vapidKeys(make)]);
          assert.deepEqual(ka, kb);
          assert.match(ka.publicKey, /^pub-[12]$/);
          assert.equal(ka.privateKey, ka.publicKey.replace("pub", "priv"), "the pair stays a pair");
          await r.reopen();
          const never = () => assert.fail("made again after a restart");
          assert.deepEqual(await r.b.push.vapidKeys(never), ka);
        }),
    );

    await t.step(
      "subscriptions: added, listed per token without keys, targeted by kind, deleted",
      () =>
        withReplicas(async ({ a, b }) => {
          await b.push.vapidKeys(() => ({ publicKey: "pub", privateKey: "private-secret" }));
          await a.push.upsert(subscription("e2", "alice", ["run.failed"], 2_000));
          await b.push.upsert(subscription("e1", "alice", ["approval.requested", "run.failed"], 1_000));
          await a.push.upsert(subscription("e3", "bob", ["approval.requested"], 3_000));
          const mine = await b.push.ofOwner("alice");
          assert.deepEqual(mine.map((s) => [s.endpoint.slice(-2), s.kinds]), [
            ["e1", ["approval.requested", "run.failed"]],
            ["e2", ["run.failed"]],
          ]);
          const listed = JSON.stringify(mine);
          for (const secret of ["private-secret", "p256dh-", "auth-"]) {
            assert.equal(listed.includes(secret), false, `a listing leaves out ${secret}`);
          }
          assert.deepEqual(await a.push.ofOwner("carol"), []);
          const approvals = await b.push.targets("approval.requested");
          assert.deepEqual(approvals, [
            subscription("e1", "alice", ["approval.requested", "run.failed"], 1_000),
            subscription("e3", "bob", ["approval.requested"], 3_000),
          ]);
          assert.equal(JSON.stringify(approvals).includes("private-secret"), false);
          // Subscribing again keeps one row and its age, with the new kinds and keys.
          await b.push.upsert({
            ...subscription("e2", "alice", ["session.lost"], 9_000),
            auth: "auth-new",
          });
          const again = await a.push.targets("session.lost");
          assert.deepEqual(again, [{
            ...subscription("e2", "alice", ["session.lost"], 2_000),
            auth: "auth-new",
          }]);
          assert.deepEqual(await a.push.kindsOf("https://push.example/e2"), ["session.lost"]);
          assert.deepEqual(await a.push.targets("run.failed"), [
            subscription("e1", "alice", ["approval.requested", "run.failed"], 1_000),
          ]);
          // The push service said 410 to A: gone for B too, and deleted once.
          assert.equal(await a.push.remove("https://push.example/e1"), true);
          assert.equal(await b.push.remove("https://push.example/e1"), false);
          assert.equal(await b.push.kindsOf("https://push.example/e1"), null);
          assert.deepEqual((await b.push.ofOwner("alice")).map((s) => s.endpoint), [
            "https://push.example/e2",
          ]);
        }),
    );

    await t.step(
      "prompts, leases, keys and subscriptions survive closing and opening again",
      () =>
        withReplicas(async (r) => {
          const keys = await r.a.push.vapidKeys(() => ({ publicKey: "pub", privateKey: "priv" }));
          await r.a.push.upsert(subscription("e", "alice", ["run.settled"], 1_000));
          await r.a.prompts.keep(keptPrompt("h1", "s", 1_000, { sentAfter: 12 }));
          await r.b.prompts.keep(keptPrompt("h2", "s", 2_000, { waitIdle: true }));
          const held = await r.a.prompts.claim("A", LONG, { id: "h1" });
          assert.ok(held);
          assert.equal(await r.a.prompts.claimDelivery("gitlab", "k"), true);
          const before = await r.a.prompts.prompts();
          await r.reopen();
          assert.deepEqual(await r.b.prompts.prompts(), before);
          assert.equal(await r.b.prompts.claim("B", LONG, { id: "h1" }), null, "the live lease was kept");
          assert.equal((await r.b.prompts.claim("B", LONG))?.prompt.id, "h2");
          assert.equal(await r.b.prompts.claimDelivery("gitlab", "k"), false, "the key is still taken");
          assert.deepEqual(await r.b.push.vapidKeys(() => assert.fail("made again")), keys);
          assert.deepEqual(await r.b.push.targets("run.settled"), [
            subscription("e", "alice", ["run.settled"], 1_000),
          ]);
          assert.equal(
            await r.b.prompts.answered(held.lease),
            true,
            "the lease's token outlives a restart",
          );
        }),
    );
  });
}

contract("sqlite", openSqliteReplicas);
contract("postgres", async () => openPgReplicas(await newDatabase()));
