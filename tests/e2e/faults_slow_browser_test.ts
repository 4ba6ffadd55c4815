/**
 * Fault row as a test (smaller counts than `deno task faults`): browsers that stop reading are cut off with
 * the daemon's memory bounded, while an ordinary browser of the same flooded session stays connected and a
 * healthy session's deltas keep arriving.
 */
import assert from "node:assert/strict";
import { slowBrowser } from "../../scripts/faults/slow_browser.ts";

Deno.test("faults: 3 browsers that stop reading are cut off (4001) with bounded memory; others carry on", async () => {
  const r = await slowBrowser({ slow: 3, windowMs: 2000, cycles: 2 });
  assert.equal(r.cutOff, 6, "every stuck browser got a 4001 close at the end of its stream");
  assert.ok(r.queuedMiB < 24, `the daemon queued ${r.queuedMiB} MiB for one stuck browser`);
  assert.ok(r.rssPeak < r.bound, `RSS peak ${r.rssPeak} MiB, bound ${r.bound} MiB`);
  assert.equal(r.readerClosed, false, "the ordinary browser of the flooded session stayed connected");
  assert.ok(r.readerMiB > 1, `the ordinary browser read ${r.readerMiB} MiB`);
  // The 2× goal is the harness's (`deno task faults`); here only a daemon stalled by the stuck sockets fails.
  const before = Math.max(...r.baselineP99), during = Math.min(...r.duringP99);
  assert.ok(
    during < Math.max(10 * before, 50),
    `healthy delta p99 ${r.baselineP99.join(", ")} ms before, ${r.duringP99.join(", ")} ms during`,
  );
});
