import assert from "node:assert/strict";
import { INDEX_STEP_ROWS, IndexPace, MIN_STEP_ROWS, STEP_BUDGET_MS } from "./indexer.ts";

Deno.test("IndexPace sizes steps to the time budget, from full steps only", () => {
  let clock = 0;
  const pace = new IndexPace(() => clock);
  /** A full step whose rows cost `msPerRow` each on the test's clock. */
  const costly = (msPerRow: number) => (rows: number) => {
    clock += rows * msPerRow;
    return { upto: 0, top: 1 };
  };
  // Rows that cost 0.002 ms each: STEP_BUDGET_MS / 0.002 per step once learned.
  for (let i = 0; i < 30; i++) pace.step(costly(0.002));
  const expected = STEP_BUDGET_MS / 0.002;
  assert.ok(Math.abs(pace.rows - expected) <= 2, `${pace.rows} rows for ${expected}`);
  // Slower rows shrink the steps, never below the floor.
  for (let i = 0; i < 30; i++) pace.step(costly(1));
  assert.equal(pace.rows, MIN_STEP_ROWS);
  // A step that caught up read fewer rows than asked: its time says nothing about a row's cost.
  const before = pace.rows;
  for (let i = 0; i < 5; i++) {
    pace.step(() => {
      clock += 50;
      return null;
    });
  }
  assert.equal(pace.rows, before);
  // Very cheap rows never make a step larger than the cap.
  for (let i = 0; i < 40; i++) pace.step(costly(0));
  assert.equal(pace.rows, INDEX_STEP_ROWS);
});
