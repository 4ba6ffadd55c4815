import assert from "node:assert/strict";
import { throttle } from "./throttle.ts";

Deno.test("throttle(): the first call runs at once, a burst runs once more at the window's end, never sooner", async () => {
  const runs: number[] = [];
  const t = throttle(() => runs.push(performance.now()), 30);
  t();
  assert.equal(runs.length, 1, "the first call runs at once");
  const deadline = performance.now() + 200;
  while (performance.now() < deadline) {
    t();
    await new Promise((r) => setTimeout(r, 1));
  }
  await new Promise((r) => setTimeout(r, 60));
  assert.ok(runs.length >= 3 && runs.length <= Math.ceil(200 / 30) + 2, `${runs.length} runs`);
  for (let i = 1; i < runs.length; i++) {
    assert.ok(runs[i] - runs[i - 1] >= 30, `gap ${runs[i] - runs[i - 1]}`);
  }
  assert.ok(runs.at(-1)! >= deadline - 1, "the last call's change is not lost");
  t.cancel();
});
