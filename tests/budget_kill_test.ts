/**
 * An approved budget card's raise is stored with its decision (one transaction): a daemon SIGKILLed right
 * after answering the approval comes back with the budget raised, and the card answered. The unit test beside
 * lib/budgets.ts injects a failure between the two writes and finds neither stored.
 */
import assert from "node:assert/strict";
import { startDaemon } from "../testing/daemon.ts";
import { startInProcess } from "../testing/inproc.ts";
import { connectAgent } from "../testing/agent.ts";

Deno.test("budgets: a SIGKILL right after approving a budget card keeps the raise", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "lvmh-budget-kill-" });
  try {
    await using d1 = await startDaemon({ dataDir });
    const a1 = await connectAgent(d1, { sessionId: "bk1" });
    const put = await d1.api("/api/sessions/bk1/budget", {
      method: "PUT",
      body: JSON.stringify({ maxCost: 2, maxTokens: 1000, onReach: "ask" }),
    });
    assert.equal(put.status, 200);
    await put.body?.cancel();
    const seq = a1.send("approval_request", {
      approvalId: "budget-1",
      toolCallId: "budget-1",
      toolName: "budget",
      args: { question: "Budget reached: $2.01 of $2.00 — continue with another $2.00?" },
      kind: "budget",
    });
    await a1.waitFrame((f) => f.type === "ack" && (f.lastSeq as number) >= seq, "ack of the card");
    const res = await d1.api("/api/approvals/budget-1", {
      method: "POST",
      body: JSON.stringify({ decision: "approve" }),
    });
    assert.equal(res.status, 200);
    // Killed as soon as the answer is in: nothing may be left for a later write.
    await d1.kill("SIGKILL");
    assert.equal((await res.json()).state, "approved");
    await d1.stop();
    await a1.close().catch(() => {});

    await using d2 = await startInProcess({ dataDir });
    const view = await (await d2.api("/api/sessions/bk1/budget")).json();
    assert.deepEqual(view.budget.current, { maxCost: 4, maxTokens: 2000 }, "raised by its own size");
    assert.deepEqual([view.budget.maxCost, view.budget.maxTokens], [2, 1000]);
    const card = (await (await d2.api("/api/approvals?sessionId=bk1")).json())[0];
    assert.deepEqual([card.id, card.state, card.kind], ["budget-1", "approved", "budget"]);
  } finally {
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});
