import assert from "node:assert/strict";
import { Coalescer } from "./coalesce.ts";

Deno.test("Coalescer lets one per session and kind through per window", () => {
  const c = new Coalescer(30_000);
  assert.equal(c.admit("a", "run.settled", 0), true);
  assert.equal(c.admit("a", "run.settled", 29_999), false);
  assert.equal(c.admit("a", "run.failed", 1), true, "another kind");
  assert.equal(c.admit("b", "run.settled", 1), true, "another session");
  assert.equal(c.admit("a", "run.settled", 30_000), true, "the window passed");
});
