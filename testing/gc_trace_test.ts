import assert from "node:assert/strict";
import { gcWithin, parseGcPauses } from "./gc_trace.ts";

// As a daemon prints them with `--trace-gc-nvp` (fields cut down): its main isolate, a worker's isolate, a
// main-isolate line cut by the worker's, and the daemon's own lines between.
const nvp = (fields: Record<string, unknown>) => `GC: ${JSON.stringify({ mutator: 1, ...fields })}`;
const OUTPUT = [
  "lvmh listening on http://127.0.0.1:28556",
  `[10991:0x55f3cf541000:0]       69 ms: ${nvp({ pause: 3.682, gc: "s" })}`,
  `[10991:0x55f3cf541000:0]     1702 ms: ${nvp({ pause: 11.041, gc: "mc" })}`,
  `[10991:0x7efe980ca000:0]       15 ms: ${nvp({ pause: 0.59, gc: "s" })}`,
  "[10991:0x55f3cf541000:0]       71 ms: Memory pool: Removed pages: 0, removed large pages: 0",
  ", removed zone reservations: 0",
  `[10991:0x55f3cf541000:0]     2210 ms: GC: {"pause":4.188,"gc":"s","reduce_mem[10991:0x7efe980ca000:0]`,
  `[10991:0x55f3cf541000:0]    11573 ms: ${nvp({ pause: 9.846, gc: "s" })}`,
  `[10991:0x55f3cf541000:0]    11618 ms: ${nvp({ pause: 7.017, gc: "mc" })}`,
  "",
].join("\n");

Deno.test("gc trace: the main isolate's collections, other lines and cut ones skipped", () => {
  const pauses = parseGcPauses(OUTPUT);
  assert.deepEqual(pauses.map((p) => [p.at, p.pause, p.kind]), [
    [69, 3.682, "s"],
    [1702, 11.041, "mc"],
    [11573, 9.846, "s"],
    [11618, 7.017, "mc"],
  ]);
  assert.deepEqual(parseGcPauses("no collections here\n"), []);
});

Deno.test("gc trace: a window's pauses summed, full collections counted", () => {
  const pauses = parseGcPauses(OUTPUT);
  const late = gcWithin(pauses, 6000, 12000);
  assert.deepEqual({ ...late, total: Number(late.total.toFixed(3)) }, {
    collections: 2,
    full: 1,
    total: 16.863,
    longest: 9.846,
  });
  assert.deepEqual(gcWithin(pauses, 100, 1000), { collections: 0, full: 0, total: 0, longest: 0 });
});
