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

Deno.test("throttle(): the window starts when a run ends, so a slow run does not bring the next one closer", async () => {
  const ends: number[] = [];
  let slow = true;
  const t = throttle(() => {
    // The first run works for 15 ms before its effect (a frame sent at its end); the next is quick.
    const until = performance.now() + (slow ? 15 : 0);
    while (performance.now() < until) { /* busy */ }
    slow = false;
    ends.push(performance.now());
  }, 30);
  t();
  t();
  const deadline = performance.now() + 500;
  while (ends.length < 2 && performance.now() < deadline) await new Promise((r) => setTimeout(r, 1));
  assert.equal(ends.length, 2, "the trailing run happened");
  assert.ok(ends[1] - ends[0] >= 30, `effects ${ends[1] - ends[0]} ms apart`);
  t.cancel();
});
