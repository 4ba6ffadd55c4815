import assert from "node:assert/strict";
import { describeSpent, reached, SpentCounter, utcDay } from "./budget_math.ts";
import { BudgetGuard } from "../plugin/src/budget.ts";
import { loadConfig } from "./config.ts";

const day = Date.parse("2026-03-04T10:00:00Z");
const msg = (input: number, output: number, cost: number) => ({
  role: "assistant",
  usage: { inputTokens: input, outputTokens: output, totalCost: cost },
});

Deno.test("SpentCounter counts each assistant message once, and agent_end only for runs without them", () => {
  const c = new SpentCounter();
  c.add({ ts: day, type: "agent_start" });
  c.add({ ts: day, type: "message_end", message: msg(100, 10, 0.5) });
  c.add({ ts: day, type: "message_end", message: { role: "user" } });
  c.add({ ts: day, type: "message_end", message: msg(120, 5, 0.25) });
  // The run's own total repeats the messages: not counted again.
  c.add({ ts: day, type: "agent_end", usage: { inputTokens: 220, outputTokens: 15, totalCost: 0.75 } });
  assert.deepEqual(c.total, { cost: 0.75, tokens: 235 });
  // An older plugin's run: only agent_end carries usage.
  c.add({ ts: day + 86_400_000, type: "agent_start" });
  c.add({ ts: day + 86_400_000, type: "message_end", message: { role: "assistant" } });
  c.add({
    ts: day + 86_400_000,
    type: "agent_end",
    usage: { inputTokens: 10, outputTokens: 1, totalCost: 1 },
  });
  assert.deepEqual(c.total, { cost: 1.75, tokens: 246 });
  assert.deepEqual(c.byDay.get("2026-03-04"), { cost: 0.75, tokens: 235 });
  assert.deepEqual(c.byDay.get("2026-03-05"), { cost: 1, tokens: 11 });
  assert.equal(utcDay(day), "2026-03-04");
});

Deno.test("reached() and describeSpent() for dollars, tokens and both", () => {
  assert.equal(reached({}, { cost: 100, tokens: 1e9 }), false, "no limit is never reached");
  assert.equal(reached({ maxCost: 5 }, { cost: 4.99, tokens: 0 }), false);
  assert.equal(reached({ maxCost: 5 }, { cost: 5, tokens: 0 }), true);
  assert.equal(reached({ maxCost: 5, maxTokens: 10 }, { cost: 0, tokens: 10 }), true);
  assert.equal(describeSpent({ maxCost: 5 }, { cost: 5.03, tokens: 0 }), "$5.03 of $5.00");
  assert.equal(describeSpent({ maxTokens: 1000 }, { cost: 0, tokens: 1200 }), "1,200 of 1,000 tokens");
});

Deno.test("BudgetGuard (plugin) never lowers its count, asks or stops, and raises once per approval", () => {
  const g = new BudgetGuard();
  const step = { maxTokens: 100 };
  g.update({ maxTokens: 100, onReach: "ask", step, spent: { cost: 0, tokens: 40 } });
  g.add({ inputTokens: 50, outputTokens: 5, totalCost: 0 });
  assert.equal(g.spent.tokens, 95);
  // A daemon that counted less (events not yet stored) does not lower it.
  g.update({ maxTokens: 100, onReach: "ask", step, spent: { cost: 0, tokens: 40 } });
  assert.equal(g.spent.tokens, 95);
  assert.equal(g.mustAsk, false);
  g.add({ inputTokens: 5, outputTokens: 0, totalCost: 0 });
  assert.equal(g.mustAsk, true);
  assert.equal(g.stopReason, null);
  const asked = g.limits;
  g.raise(asked);
  assert.equal(g.limits?.maxTokens, 200);
  // The daemon already sent the raised budget: the approval does not raise it twice.
  g.update({ maxTokens: 300, onReach: "ask", step, spent: { cost: 0, tokens: 0 } });
  g.raise(asked);
  assert.equal(g.limits?.maxTokens, 300);
  g.update({ maxTokens: 100, onReach: "stop", step, spent: { cost: 0, tokens: 0 } });
  assert.match(String(g.stopReason), /Budget reached: 100 of 100 tokens/);
  g.update({ onReach: "stop", step: {}, spent: { cost: 0, tokens: 0 }, stopped: "daily budget reached" });
  assert.equal(g.stopReason, "daily budget reached");
  // What is left of the daily cap is used up by this session's own spending since the update.
  g.update({ onReach: "stop", step: {}, spent: { cost: 0, tokens: 0 }, dailyLeft: { tokens: 10 } });
  assert.equal(g.stopReason, null);
  g.add({ inputTokens: 9, outputTokens: 1, totalCost: 0 });
  assert.equal(g.stopReason, "Daily budget reached");
  g.update(undefined);
  assert.equal(g.stopReason, "Daily budget reached", "an older daemon's policy keeps the budget");
  g.update(null);
  assert.equal(g.stopReason, null);
});

Deno.test("config reads LVMH_SPAWN_BUDGET, LVMH_BUDGET and LVMH_DAILY_BUDGET", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const base = { LVMH_DATA_DIR: dir, LVMH_TOKEN: "t".repeat(20) };
    const c = loadConfig({
      ...base,
      LVMH_SPAWN_BUDGET: "5",
      LVMH_BUDGET: "200000t,stop",
      LVMH_DAILY_BUDGET: "$50",
    });
    assert.deepEqual(c.spawnBudget, { maxCost: 5, onReach: "ask" });
    assert.deepEqual(c.localBudget, { maxTokens: 200000, onReach: "stop" });
    assert.deepEqual(c.dailyBudget, { maxCost: 50, onReach: "stop" });
    assert.equal(loadConfig(base).spawnBudget, null);
    for (const bad of ["five", "0", "5,maybe", "$5t"]) {
      assert.throws(() => loadConfig({ ...base, LVMH_BUDGET: bad }), /LVMH_BUDGET/);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
