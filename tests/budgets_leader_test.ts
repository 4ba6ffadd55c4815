/**
 * Budgets with replicas: every replica counts every session's committed events, and only the one that leads
 * announces `budget.reached` (a session's and the daily cap's), so the audit and notifications hear it once.
 * Two Budgets on one real SQLite file stand for two replicas' copies.
 */
import assert from "node:assert/strict";
import { Store } from "../lib/store.ts";
import { Budgets } from "../lib/budgets.ts";
import type { AgentEvent, SessionInfo } from "../lib/protocol.ts";
import type { NotifyEvent } from "../lib/notify/kinds.ts";
import { sessionInfo } from "../testing/agent.ts";

const reply = (sessionId: string, seq: number, tokens: number) =>
  ({
    v: 1,
    sessionId,
    seq,
    ts: Date.now(),
    type: "message_end",
    message: {
      role: "assistant",
      id: `m${seq}`,
      usage: { inputTokens: tokens, outputTokens: 0, totalCost: 0 },
    },
  }) as unknown as AgentEvent;

Deno.test("budgets: of two replicas counting the same log, only the leader announces what is reached", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-budgets-leader-" });
  const store = new Store(`${dir}/lvmh.db`);
  let leader: "a" | "b" = "a";
  const heard: { by: string; event: NotifyEvent }[] = [];
  const replica = (name: "a" | "b") => {
    const b = new Budgets(store.db, {
      spawnBudget: null,
      localBudget: null,
      dailyBudget: { maxTokens: 1_000, onReach: "stop" },
    }, {
      session: (id) => store.getSession(id),
      send: () => true,
      online: () => [],
      sessions: () => store.listSessions(),
      announces: () => leader === name,
    });
    b.onReached((event) => heard.push({ by: name, event }));
    return b;
  };
  const a = replica("a");
  const b = replica("b");
  try {
    store.upsertSession(sessionInfo("s") as SessionInfo);
    a.set("s", { maxTokens: 100, onReach: "ask" });
    store.appendBatch([reply("s", 1, 10)]);
    a.committed("s");
    b.committed("s");
    store.appendBatch([reply("s", 2, 200)]);
    a.committed("s");
    b.committed("s");
    assert.deepEqual(heard.map((h) => [h.by, h.event.sessionId]), [["a", "s"]], "the session's, once");
    assert.deepEqual(b.spent("s"), a.spent("s"), "both count");

    // The leader changed: the daily cap's crossing is announced by the new one alone.
    leader = "b";
    store.appendBatch([reply("s", 3, 2_000)]);
    a.committed("s");
    b.committed("s");
    const daily = heard.filter((h) => h.event.sessionId === null);
    assert.deepEqual(daily.map((h) => h.by), ["b"]);
    assert.throws(() => a.checkPrompt("s"), /daily/i, "both refuse past the cap");
    assert.throws(() => b.checkPrompt("s"), /daily/i);
  } finally {
    a.close();
    b.close();
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
});
