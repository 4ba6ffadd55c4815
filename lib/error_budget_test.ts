import assert from "node:assert/strict";
import { errorBudget } from "./error_budget.ts";

Deno.test("errorBudget(): at most N error frames per second, the budget back a second later", () => {
  let t = 0;
  const allow = errorBudget(3, () => t);
  assert.deepEqual([allow(), allow(), allow(), allow(), allow()], [true, true, true, false, false]);
  t = 999;
  assert.equal(allow(), false, "still the same second");
  t = 1000;
  assert.deepEqual([allow(), allow(), allow(), allow()], [true, true, true, false]);
});
