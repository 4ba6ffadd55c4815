import assert from "node:assert/strict";
import { addWaits, parseTrace, segments, waits } from "./delta_trace_read.ts";

// Deltas stamped at 100, 200 and 300 ms; the loop ran a commit over 199.9–200.5 and a list update over
// 299.0–300.1 and 300.2–300.4. (Tasks are written in the order they ended; the reader sorts them.)
const TEXT = [
  "origin 12.500",
  "100 0.050 0.070",
  "@ 199.900 200.500 commit: SQLite",
  "200 0.600 0.650",
  "@ 300.200 300.400 list update",
  "@ 299.000 300.100 list update",
  "300 0.500 0.520",
  "400 0.900 0.950",
  "",
].join("\n");

Deno.test("delta trace reading: deltas and tasks parsed; segments of a window", () => {
  const trace = parseTrace(TEXT);
  assert.equal(trace.origin, 12.5);
  assert.equal(trace.deltas.length, 4);
  assert.deepEqual(trace.deltas[1], { sentAt: 200, arrived: 0.6, handled: 0.65 });
  assert.deepEqual(trace.tasks.map((t) => t.start), [199.9, 299, 300.2], "sorted by start");
  assert.equal(trace.tasks[0].label, "commit: SQLite");
  const s = segments(trace.deltas, [150, 350]);
  assert.deepEqual([s.in50, s.handled50, s.in99], [0.6, 0.65, 0.6]);
  assert.equal(segments(trace.deltas).in99, 0.9, "no window: every delta");
});

Deno.test("delta trace reading: each late delta counted behind the tasks its wait overlapped", () => {
  const trace = parseTrace(TEXT);
  const w = waits(trace, 0.3);
  assert.equal(w.late, 3, "the deltas at 200, 300 and 400");
  assert.equal(w.of, 4);
  // 200 waited 200–200.6 (the commit); 300 waited 300–300.5 (both list updates, counted once); 400 none.
  assert.deepEqual(w.behind, { "commit: SQLite": 1, "list update": 1 });
  assert.equal(w.untraced, 1);
  const inWindow = waits(trace, 0.3, [250, 350]);
  assert.deepEqual([inWindow.late, inWindow.of, inWindow.untraced], [1, 1, 0]);
  const sum = addWaits([w, inWindow]);
  assert.deepEqual(sum, { late: 4, of: 5, behind: { "commit: SQLite": 1, "list update": 2 }, untraced: 1 });
});
