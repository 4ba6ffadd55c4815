import assert from "node:assert/strict";
import { tooBig } from "./frame_precheck.ts";

Deno.test("tooBig() measures UTF-8 bytes, not UTF-16 units, at the limit's edges", () => {
  const limit = 1000;
  assert.equal(tooBig("a".repeat(1000), limit), false);
  assert.equal(tooBig("a".repeat(1001), limit), true);
  // "é" is 2 bytes, "€" 3, "😀" 4 (two UTF-16 units).
  assert.equal(tooBig("é".repeat(500), limit), false);
  assert.equal(tooBig("é".repeat(501), limit), true);
  assert.equal(tooBig("€".repeat(333) + "a", limit), false);
  assert.equal(tooBig("€".repeat(334), limit), true);
  assert.equal(tooBig("😀".repeat(250), limit), false);
  assert.equal(tooBig("😀".repeat(250) + "a", limit), true);
  assert.equal(tooBig("a".repeat(999) + "😀", limit), true, "a 4-byte character past the end");
  assert.equal(tooBig("", limit), false);
});

Deno.test("tooBig() answers a 10 MB frame without encoding it", () => {
  const big = "x".repeat(10 * 1024 * 1024);
  const t0 = performance.now();
  for (let i = 0; i < 100; i++) assert.equal(tooBig(big), true);
  // 100 encodes of 10 MB would take seconds; the length check takes microseconds.
  assert.ok(performance.now() - t0 < 50, `took ${performance.now() - t0} ms`);
});
