import assert from "node:assert/strict";
import { Store } from "./store.ts";
import { type BudgetDefaults, Budgets } from "./budgets.ts";
import type { AgentEvent, PluginBudget, SessionInfo } from "./protocol.ts";
import type { NotifyEvent } from "./notify/kinds.ts";
import { sessionInfo } from "../testing/agent.ts";
import { ConflictError } from "./errors.ts";
import { Approvals } from "./approvals.ts";
import { ApprovalStore } from "./approval_store.ts";
import { SqliteApprovalLog } from "./storage/sqlite_approval_log.ts";

const reply = (sessionId: string, seq: number, tokens: number, cost = 0) =>
  ({
    v: 1,
    sessionId,
    seq,
    ts: Date.now(),
    type: "message_end",
    message: {
      role: "assistant",
      id: `m${seq}`,
      usage: { inputTokens: tokens, outputTokens: 0, totalCost: cost },
    },
  }) as unknown as AgentEvent;

async function withBudgets(
  defaults: Partial<BudgetDefaults>,
  fn: (b: Budgets, store: Store, sent: Map<string, PluginBudget | null>, events: NotifyEvent[]) => void,
) {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-budgets-" });
  const store = new Store(`${dir}/lvmh.db`);
  const sent = new Map<string, PluginBudget | null>();
  const events: NotifyEvent[] = [];
  const make = () =>
    new Budgets(store.db, { spawnBudget: null, localBudget: null, dailyBudget: null, ...defaults }, {
      session: (id) => store.getSession(id),
      send: (id, b) => (sent.set(id, b), true),
      online: () => store.listSessions().map((s) => s.id),
      sessions: () => store.listSessions(),
    });
  const b = make();
  b.onReached((e) => events.push(e));
  try {
    fn(b, store, sent, events);
  } finally {
    b.close();
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("Budgets: spawn and terminal defaults, an approved raise kept in its own row", async () => {
  await withBudgets({
    spawnBudget: { maxCost: 5, onReach: "ask" },
    localBudget: { maxTokens: 100, onReach: "stop" },
  }, (b, store, sent) => {
    store.upsertSession(sessionInfo("spawned", { agent: true }) as SessionInfo);
    store.upsertSession(sessionInfo("local") as SessionInfo);
    assert.equal(b.budgetOf("spawned")?.source, "spawn");
    assert.deepEqual(b.budgetOf("spawned")?.current, { maxCost: 5 });
    assert.equal(b.budgetOf("local")?.onReach, "stop");
    assert.equal(b.budgetOf("unknown"), null);
    b.approved("spawned");
    assert.deepEqual(b.budgetOf("spawned")?.current, { maxCost: 10 });
    assert.deepEqual(sent.get("spawned")?.maxCost, 10);
    assert.deepEqual(sent.get("spawned")?.step, { maxCost: 5 });
    // `{}` removes the budget, the default included.
    b.set("spawned", null);
    assert.equal(b.budgetOf("spawned"), null);
    assert.equal(sent.get("spawned"), null);
  });
});

Deno.test("Budgets: spent from the log, reached once announced, prompts refused for stop", async () => {
  await withBudgets({}, (b, store, _sent, events) => {
    store.upsertSession(sessionInfo("s") as SessionInfo);
    b.set("s", { maxTokens: 100, onReach: "stop" });
    store.appendBatch([reply("s", 1, 60)]);
    b.committed("s");
    assert.deepEqual(b.spent("s"), { cost: 0, tokens: 60 });
    b.checkPrompt("s");
    store.appendBatch([reply("s", 2, 50)]);
    b.committed("s");
    store.appendBatch([reply("s", 3, 5)]);
    b.committed("s");
    assert.equal(events.length, 1, "announced once");
    assert.equal(events[0].type, "budget.reached");
    assert.match(String(events[0].data.text), /110 of 100 tokens/);
    assert.throws(
      () => b.checkPrompt("s"),
      (e) => e instanceof ConflictError && /^budget reached/.test(e.message),
    );
    assert.equal(b.glance("s")?.used, 1.15);
  });
});

Deno.test("Budgets: the daily cap stops every online session and says what is left", async () => {
  await withBudgets({ dailyBudget: { maxTokens: 100, onReach: "stop" } }, (b, store, sent, events) => {
    store.upsertSession(sessionInfo("a") as SessionInfo);
    store.upsertSession(sessionInfo("b") as SessionInfo);
    assert.deepEqual(b.wire("a")?.dailyLeft, { tokens: 100 });
    store.appendBatch([reply("a", 1, 70)]);
    b.committed("a");
    store.appendBatch([reply("b", 1, 40)]);
    b.committed("b");
    assert.equal(events.at(-1)?.data.scope, "daily");
    for (const id of ["a", "b"]) {
      assert.match(String(sent.get(id)?.stopped), /daily budget reached: 110 of 100 tokens/);
      assert.throws(() => b.checkPrompt(id), /daily budget reached/);
    }
  });
});

Deno.test("Budgets: a budget card's decision and raise are one transaction (a failure between keeps neither)", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-budgets-tx-" });
  const path = `${dir}/lvmh.db`;
  const open = () => {
    const store = new Store(path);
    const budgets = new Budgets(store.db, { spawnBudget: null, localBudget: null, dailyBudget: null }, {
      session: (id) => store.getSession(id),
      send: () => true,
      online: () => [],
      sessions: () => store.listSessions(),
    });
    return { store, budgets };
  };
  const card = (approvalId: string) => ({
    sessionId: "s",
    ts: Date.now(),
    approvalId,
    toolCallId: approvalId,
    toolName: "budget",
    args: {},
    kind: "budget" as const,
  });
  try {
    let { store, budgets } = open();
    store.upsertSession(sessionInfo("s") as SessionInfo);
    budgets.set("s", { maxCost: 1, onReach: "ask" });
    const fail = new Error("injected between the decision and the raise");
    let failAfterRaise = false;
    const approvals = new Approvals(new SqliteApprovalLog(store.db), {
      trySend: () => true,
      touch: () => {},
      broadcast: () => {},
      raiseBudget: (id) => {
        if (!failAfterRaise) throw fail; // the decision's UPDATE ran, the raise did not
        budgets.raise(id);
        throw fail; // both ran, the commit did not
      },
      budgetApproved: (id) => budgets.raised(id),
    });
    await approvals.requested(card("c1"));
    await assert.rejects(approvals.decide("c1", { decision: "approve" }), fail);
    failAfterRaise = true;
    await assert.rejects(approvals.decide("c1", { decision: "approve" }), fail);
    // What the file holds, read by a fresh open: the card still waits, the budget is not raised.
    budgets.close();
    store.close();
    ({ store, budgets } = open());
    assert.equal(new ApprovalStore(store.db).get("c1")?.state, "pending");
    assert.deepEqual(budgets.budgetOf("s")?.current, { maxCost: 1 });
    // Without a failure both land, and survive the reopen.
    const ok = new Approvals(new SqliteApprovalLog(store.db), {
      trySend: () => true,
      touch: () => {},
      broadcast: () => {},
      raiseBudget: (id) => budgets.raise(id),
      budgetApproved: (id) => budgets.raised(id),
    });
    assert.equal((await ok.decide("c1", { decision: "approve" })).state, "approved");
    budgets.close();
    store.close();
    ({ store, budgets } = open());
    assert.equal(new ApprovalStore(store.db).get("c1")?.state, "approved");
    assert.deepEqual(budgets.budgetOf("s")?.current, { maxCost: 2 });
    budgets.close();
    store.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
