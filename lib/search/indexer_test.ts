import assert from "node:assert/strict";
import { INDEX_STEP_ROWS, IndexPace, STEP_BUDGET_MS } from "./indexer.ts";

/** A step that costs `msPerRow` for each row it reads (spinning: the pace reads the clock). */
function costly(msPerRow: number) {
  return (rows: number) => {
    const until = performance.now() + rows * msPerRow;
    while (performance.now() < until) { /* work */ }
    return { upto: 0, top: 1 };
  };
}

Deno.test("IndexPace sizes steps to the time budget, from full steps only", () => {
  const pace = new IndexPace();
  // Rows that cost 0.02 ms each: about STEP_BUDGET_MS / 0.02 per step once learned.
  for (let i = 0; i < 20; i++) pace.step(costly(0.02));
  const expected = STEP_BUDGET_MS / 0.02;
  assert.ok(pace.rows >= expected * 0.6 && pace.rows <= expected * 1.1, `${pace.rows} rows for ~${expected}`);
  // Slower rows shrink the steps, never below the floor.
  for (let i = 0; i < 20; i++) pace.step(costly(1));
  assert.equal(pace.rows, 20);
  // A step that caught up read fewer rows than asked: its time says nothing about a row's cost.
  const before = pace.rows;
  for (let i = 0; i < 5; i++) pace.step(() => null);
  assert.equal(pace.rows, before);
  // Very cheap rows never make a step larger than the cap.
  for (let i = 0; i < 30; i++) pace.step(() => ({ upto: 0, top: 1 }));
  assert.equal(pace.rows, INDEX_STEP_ROWS);
});
