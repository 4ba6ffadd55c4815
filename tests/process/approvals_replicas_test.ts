/**
 * The owner of approvals (lib/approvals.ts) on several replicas sharing one PostgreSQL database (a real server
 * from testing/postgres.ts): each replica's `Approvals` over its own `PgApprovalLog` (pools and LISTEN
 * connection of its own), with a plugin reached through that replica's `trySend`. A request recorded through
 * A is counted and listed on B and C within 1 s; B and C answering at once: one wins on every replica, and
 * only the winner's replica sends the answer, once; A's plugin asking again gets the stored answer.
 */
import assert from "node:assert/strict";
import { Approvals } from "../../lib/approvals.ts";
import { ConflictError } from "../../lib/errors.ts";
import type { ServerFrame } from "../../lib/protocol.ts";
import type { Command } from "../../lib/sessions.ts";
import { PgApprovalLog } from "../../lib/storage/pg_approval_log.ts";
import { newDatabase, postgresTest } from "../../testing/storage_replicas.ts";
import { waitFor } from "../../testing/daemon.ts";

/** A request reaches every other replica's cache within this. */
const SEEN_MS = 1_000;

interface Replica {
  name: string;
  approvals: Approvals;
  log: PgApprovalLog;
  /** What this replica's `trySend` was handed. */
  sent: { sessionId: string; command: Command }[];
  frames: ServerFrame[];
  touched: string[];
}

async function openReplica(name: string, url: string): Promise<Replica> {
  const log = await PgApprovalLog.open(url, { max: 4 });
  const replica: Replica = { name, log, approvals: null!, sent: [], frames: [], touched: [] };
  replica.approvals = new Approvals(log, {
    trySend: (sessionId, command) => replica.sent.push({ sessionId, command }) > 0,
    touch: (sessionId) => replica.touched.push(sessionId),
    broadcast: (frame) => replica.frames.push(frame),
  });
  await replica.approvals.start();
  return replica;
}

async function closeAll(replicas: Replica[]) {
  for (const r of replicas) {
    await r.approvals.close();
    await r.log.close();
  }
}

const request = (approvalId: string, sessionId = "s1") => ({
  sessionId,
  ts: Date.now(),
  approvalId,
  toolCallId: `call-${approvalId}`,
  toolName: "bash",
  args: { command: `echo ${approvalId}` },
});

const decisionsOf = (r: Replica, approvalId: string) =>
  r.sent.filter((s) => s.command.type === "approval_decision" && s.command.approvalId === approvalId);

postgresTest("approvals across replicas on one PostgreSQL database", async (t) => {
  const url = await newDatabase();
  const replicas = [await openReplica("A", url), await openReplica("B", url), await openReplica("C", url)];
  const [a, b, c] = replicas;
  try {
    await t.step("a request recorded through A is counted and listed on B and C within 1 s", async () => {
      const t0 = performance.now();
      await a.approvals.requested(request("r0"));
      assert.equal(a.approvals.waiting("s1"), 1, "A counts it once stored");
      for (const other of [b, c]) {
        await waitFor(() => other.approvals.waiting("s1") === 1, `${other.name} counts r0`, SEEN_MS);
      }
      const ms = performance.now() - t0;
      console.log(`request through A seen by B and C after ${ms.toFixed(0)} ms`);
      for (const other of [b, c]) {
        assert.deepEqual(other.approvals.pending().map((x) => x.id), ["r0"]);
        const frame = other.frames.at(-1)!;
        assert.deepEqual(frame.type === "approvals" && frame.pending.map((x) => x.id), ["r0"]);
        assert.ok(other.touched.includes("s1"), `${other.name}'s session row shows the count`);
        const [listed] = await other.approvals.list({ sessionId: "s1", state: "pending" });
        assert.deepEqual(listed, a.approvals.pending()[0], "the same record on every replica");
      }
    });

    await t.step(
      "B and C answering at once, 12 rounds: one wins, every replica sees the winner",
      async () => {
        for (let i = 0; i < 12; i++) {
          const id = i === 0 ? "r0" : `r${i}`;
          if (i > 0) await a.approvals.requested(request(id));
          for (const other of [b, c]) {
            await waitFor(
              () => other.approvals.pending().some((x) => x.id === id),
              `${other.name} has ${id}`,
              SEEN_MS,
            );
          }
          // Every third round both give the same answer: the loser is handed the same record, not a 409.
          const same = i % 3 === 2;
          const [first, second] = i % 2 ? [b, c] : [c, b];
          const answers = await Promise.allSettled([
            first.approvals.decide(id, { decision: "approve" }, `${first.name}-user`),
            second.approvals.decide(id, { decision: same ? "approve" : "reject" }, `${second.name}-user`),
          ]);
          const stored = await a.approvals.list({ sessionId: "s1" }).then((all) =>
            all.find((x) => x.id === id)!
          );
          const winner = stored.decidedBy === `${first.name}-user` ? first : second;
          const loser = winner === first ? second : first;
          assert.ok(["B-user", "C-user"].includes(stored.decidedBy!), `round ${i}: one of them answered`);
          if (same) {
            assert.deepEqual(answers.map((x) => x.status), ["fulfilled", "fulfilled"]);
            for (const x of answers) assert.deepEqual((x as PromiseFulfilledResult<unknown>).value, stored);
          } else {
            const rejected = answers.filter((x) => x.status === "rejected") as PromiseRejectedResult[];
            assert.equal(rejected.length, 1, `round ${i}: exactly one answer is refused`);
            assert.ok(rejected[0].reason instanceof ConflictError, String(rejected[0].reason));
            const won = answers.find((x) => x.status === "fulfilled") as PromiseFulfilledResult<unknown>;
            assert.deepEqual(won.value, stored, `round ${i}: the winner is handed the stored record`);
          }
          // Only the replica whose answer was stored sends it to the plugin (the daemon routes it to the holder).
          const delivered = decisionsOf(winner, id);
          assert.equal(delivered.length, 1, `round ${i}: ${winner.name} sends the answer once`);
          assert.deepEqual(delivered[0], {
            sessionId: "s1",
            command: {
              type: "approval_decision",
              approvalId: id,
              decision: stored.state === "approved" ? "approve" : "reject",
              by: `${winner.name}-user`,
            },
          });
          assert.equal(decisionsOf(loser, id).length, 0, `round ${i}: ${loser.name} sends nothing`);
          assert.equal(decisionsOf(a, id).length, 0, `round ${i}: A, which did not answer, sends nothing`);
          for (const r of replicas) {
            await waitFor(() => r.approvals.waiting("s1") === 0, `${r.name} no longer counts ${id}`, SEEN_MS);
            const [seen] = (await r.approvals.list({ sessionId: "s1" })).filter((x) => x.id === id);
            assert.deepEqual(seen, stored, `round ${i}: ${r.name} lists the winner's answer`);
          }
        }
      },
    );

    await t.step(
      "A's plugin asking again gets the stored answer, and its applying it is seen on B",
      async () => {
        const stored = (await b.approvals.list({ sessionId: "s1" })).find((x) => x.id === "r1")!;
        a.sent.length = 0;
        // After a reconnect to A the plugin sends each request it still waits for again.
        await a.approvals.requested(request("r1"));
        assert.deepEqual(a.sent.map((s) => s.command), [{
          type: "approval_decision",
          approvalId: "r1",
          decision: stored.state === "approved" ? "approve" : "reject",
          by: stored.decidedBy,
        }]);
        await a.approvals.resolved({
          sessionId: "s1",
          approvalId: "r1",
          decision: stored.state === "approved" ? "approve" : "reject",
          by: stored.decidedBy!,
          source: "web",
        });
        const applied = (await b.approvals.list({ sessionId: "s1" })).find((x) => x.id === "r1")!;
        assert.equal(applied.source, "web");
        assert.equal(typeof applied.appliedAt, "number");
        assert.equal(applied.state, stored.state, "applying does not change the answer");
      },
    );

    await t.step("a session's end on A cancels what waits in it on every replica", async () => {
      await a.approvals.requested(request("e1", "s2"));
      await waitFor(() => c.approvals.waiting("s2") === 1, "C counts e1", SEEN_MS);
      await a.approvals.sessionEnded("s2");
      await waitFor(() => c.approvals.waiting("s2") === 0, "C no longer counts e1", SEEN_MS);
      await assert.rejects(c.approvals.decide("e1", { decision: "approve" }, "carol"), ConflictError);
      assert.equal(decisionsOf(c, "e1").length, 0);
    });
  } finally {
    await closeAll(replicas);
  }
});
