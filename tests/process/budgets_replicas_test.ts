/**
 * Session budgets of three daemon processes on one real PostgreSQL database (issue 23): a budget set through
 * B's REST route reaches the plugin A holds in a `policy` frame and every replica lists it; a budget card
 * approved on B raises the budget A sends and shows; a change reaches the plugin from the replica that made it
 * and from the holder, not once per replica.
 */
import assert from "node:assert/strict";
import { startPostgres } from "../../testing/postgres.ts";
import { waitFor } from "../../testing/daemon.ts";
import { connectAgent, type Frame } from "../../testing/agent.ts";
import { startReplicas } from "../../testing/replicas.ts";

/** Another replica's change is read within a second (lib/budget_shared.ts); this leaves room for a slow CI. */
const SEEN_MS = 10_000;

type Listed = { id: string; budget?: { limits: { maxCost?: number; maxTokens?: number } } };

Deno.test("replicas: a session's budget is the deployment's, set or raised on any replica", async (t) => {
  await using pg = await startPostgres();
  const databaseUrl = await pg.newDatabase();
  await using set = await startReplicas(3, { databaseUrl });
  const [a, b, c] = set.replicas.map((r) => r.daemon());
  const listed = async (d: typeof a, id: string) => {
    const rows = await (await d.api("/api/sessions")).json() as Listed[];
    return rows.find((s) => s.id === id);
  };
  const agent = await connectAgent(a, { sessionId: "bud-1" });
  try {
    assert.equal(agent.welcome.budget ?? null, null, "no budget yet");
    await waitFor(async () => (await listed(b, "bud-1")) !== undefined, "B has A's session", SEEN_MS);
    const policies = (limits: Record<string, number>) => (f: Frame) =>
      f.type === "policy" &&
      Object.entries(limits).every(([k, v]) => (f.budget as Record<string, unknown>)?.[k] === v);

    await t.step("set on B: A's plugin hears it, both list it", async () => {
      const res = await b.api("/api/sessions/bud-1/budget", {
        method: "PUT",
        body: JSON.stringify({ maxCost: 2, maxTokens: 1000, onReach: "ask" }),
      });
      assert.equal(res.status, 200);
      assert.deepEqual((await res.json()).budget.current, { maxCost: 2, maxTokens: 1000 });
      const policy = await agent.waitFrame(
        policies({ maxCost: 2, maxTokens: 1000 }),
        "A's plugin told the budget set on B",
        SEEN_MS,
      );
      assert.equal((policy.budget as { onReach: string }).onReach, "ask");
      for (const d of [a, b]) {
        await waitFor(
          async () => (await listed(d, "bud-1"))?.budget?.limits.maxCost === 2,
          `${d === a ? "A" : "B"} lists the budget`,
          SEEN_MS,
        );
        assert.deepEqual((await listed(d, "bud-1"))?.budget?.limits, { maxCost: 2, maxTokens: 1000 });
      }
      const view = await (await a.api("/api/sessions/bud-1/budget")).json();
      assert.deepEqual(view.budget.current, { maxCost: 2, maxTokens: 1000 }, "A's REST answer agrees");
    });

    await t.step("a budget card approved on B raises the budget A sends and shows", async () => {
      const seq = agent.send("approval_request", {
        approvalId: "budget-1",
        toolCallId: "budget-1",
        toolName: "budget",
        args: { question: "Budget reached: $2.01 of $2.00, continue with another $2.00?" },
        kind: "budget",
      });
      await agent.waitFrame((f) => f.type === "ack" && (f.lastSeq as number) >= seq, "ack of the card");
      await waitFor(
        async () => {
          const res = await b.api("/api/approvals?sessionId=bud-1");
          return (await res.json() as { id: string }[]).some((x) => x.id === "budget-1");
        },
        "B has the card",
        SEEN_MS,
      );
      const res = await b.api("/api/approvals/budget-1", {
        method: "POST",
        body: JSON.stringify({ decision: "approve" }),
      });
      assert.equal(res.status, 200);
      assert.equal((await res.json()).state, "approved");
      await agent.waitFrame(
        (f) => f.type === "approval_decision" && f.approvalId === "budget-1",
        "A's plugin gets the answer",
        SEEN_MS,
      );
      await agent.waitFrame(policies({ maxCost: 4, maxTokens: 2000 }), "A's plugin told the raise", SEEN_MS);
      for (const d of [a, b]) {
        await waitFor(
          async () => (await listed(d, "bud-1"))?.budget?.limits.maxCost === 4,
          `${d === a ? "A" : "B"} lists the raised budget`,
          SEEN_MS,
        );
        const view = await (await d.api("/api/sessions/bud-1/budget")).json();
        assert.deepEqual(
          view.budget.current,
          { maxCost: 4, maxTokens: 2000 },
          "raised once, by its own size",
        );
        assert.deepEqual([view.budget.maxCost, view.budget.maxTokens], [2, 1000]);
      }
    });

    await t.step(
      "a change is sent by B, which made it, and A, which holds the plugin: not by C",
      async () => {
        const before = agent.frames.length;
        const limits = { maxCost: 7, maxTokens: 7000 };
        const res = await b.api("/api/sessions/bud-1/budget", {
          method: "PUT",
          body: JSON.stringify({ ...limits, onReach: "ask" }),
        });
        assert.equal(res.status, 200);
        // A replica sends what it reads of another's change in the same step as its copy takes it.
        for (const d of [a, c]) {
          await waitFor(
            async () => (await listed(d, "bud-1"))?.budget?.limits.maxCost === 7,
            "read",
            SEEN_MS,
          );
        }
        // Sent through C after C read the change, a prompt comes after anything C sent for it (one send order).
        const marker = await c.api("/api/sessions/bud-1/prompt", {
          method: "POST",
          body: JSON.stringify({ message: "after the budget" }),
        });
        assert.ok(marker.ok, await marker.text());
        await agent.waitFrame(
          (f) => f.type === "prompt" && f.message === "after the budget",
          "the marker",
          SEEN_MS,
        );
        const sent = agent.frames.slice(before).filter(policies(limits)).length;
        assert.equal(sent, 2, "B's own send and A's, as holder");
      },
    );
  } finally {
    await agent.close();
  }
});
