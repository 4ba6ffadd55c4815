/** Reconnect delays. */
import assert from "node:assert/strict";
import { Backoff } from "./backoff.ts";

Deno.test("Backoff doubles up to 30 s, resets on welcome, and is slower after a replacement", () => {
  const b = new Backoff(() => 1); // no jitter
  assert.deepEqual([1006, 1006, 1006].map((c) => b.next(c)), [250, 500, 1000]);
  b.reset();
  assert.equal(b.next(1006), 250);
  for (let i = 0; i < 20; i++) b.next(1006);
  assert.equal(b.next(1006), 30_000);
  assert.deepEqual([4000, 4000].map((c) => b.next(c)), [5000, 10_000]);
});
