import assert from "node:assert/strict";
import { fullCollector, IdleCollector } from "./memory.ts";

const MiB = 1024 * 1024;

Deno.test("IdleCollector collects once the RSS grew past the bound and the heap then stayed flat", () => {
  const m = { heapUsed: 20 * MiB, rss: 90 * MiB, activity: 0 };
  let runs = 0;
  const c = new IdleCollector(
    () => {
      runs++;
      Object.assign(m, { heapUsed: 18 * MiB, rss: 100 * MiB }); // what was live
    },
    () => ({ ...m }),
    { growthBytes: 48 * MiB, quietBytes: 4 * MiB },
  );
  Object.assign(m, { heapUsed: 60 * MiB, rss: 200 * MiB });
  assert.equal(c.check(), false, "heap growing fast: a burst is still on");
  Object.assign(m, { heapUsed: 90 * MiB, rss: 290 * MiB });
  assert.equal(c.check(), false, "still growing");
  Object.assign(m, { heapUsed: 91 * MiB, rss: 291 * MiB });
  assert.equal(c.check(), true, "RSS 201 MiB up and the heap flat for one check");
  assert.equal(runs, 1);
  assert.equal(c.check(), false, "the new floor is what survived");
  Object.assign(m, { heapUsed: 40 * MiB, rss: 140 * MiB });
  c.check();
  assert.equal(c.check(), false, "only 40 MiB above the new floor");
  assert.equal(c.collections, 1);
});

Deno.test("IdleCollector leaves a small or steadily growing process to V8", () => {
  const m = { heapUsed: 10 * MiB, rss: 80 * MiB, activity: 0 };
  const c = new IdleCollector(() => assert.fail("must not collect"), () => ({ ...m }));
  for (let i = 0; i < 30; i++) {
    m.heapUsed += 5 * MiB; // allocation going on: never quiet
    m.rss += 5 * MiB;
    c.check();
  }
  Object.assign(m, { heapUsed: 12 * MiB, rss: 85 * MiB }); // V8 collected by itself: a lower floor
  c.check();
  m.rss = 120 * MiB;
  c.check();
  c.check();
  assert.equal(c.collections, 0);
});

Deno.test("IdleCollector waits while work goes on, however flat the heap", () => {
  const m = { heapUsed: 20 * MiB, rss: 300 * MiB, activity: 0 };
  const c = new IdleCollector(() => {}, () => ({ ...m }), { growthBytes: 48 * MiB });
  m.rss = 400 * MiB;
  for (let i = 0; i < 5; i++) {
    m.activity += 10; // a few sessions streaming: little garbage, but a pause would land in their stream
    assert.equal(c.check(), false);
  }
  assert.equal(c.check(), true, "one check with nothing done");
});

Deno.test("fullCollector() reaches V8's full collection and frees garbage", () => {
  const gc = fullCollector();
  assert.ok(gc, "Deno lets node:v8 expose gc at run time");
  let junk: unknown[] | null = Array.from({ length: 500_000 }, (_, i) => ({ i, s: `x${i}` }));
  const before = Deno.memoryUsage().heapUsed;
  assert.equal(junk.length, 500_000);
  junk = null;
  gc();
  const after = Deno.memoryUsage().heapUsed;
  assert.ok(after < before - 10 * MiB, `heap used ${before} → ${after}`);
});
