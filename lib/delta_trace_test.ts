import assert from "node:assert/strict";
import { traced, traceTo } from "./delta_trace.ts";
import { wallClock } from "./wall_clock.ts";

Deno.test("delta trace: off without a path; stamped deltas traced, other frames not; written as lines", async () => {
  assert.equal(traceTo(undefined), null);
  const path = await Deno.makeTempFile({ prefix: "lvmh-trace-test-" });
  try {
    const trace = traceTo(path, false)!;
    const sentAt = wallClock().now();
    const delta = JSON.stringify({
      v: 1,
      type: "message_update",
      sessionId: "a",
      seq: 2,
      ts: 1,
      delta: "x",
      sentAt,
    });
    const span = trace.arrived(delta);
    assert.ok(span, "a stamped delta is traced");
    assert.equal(span.sentAt, sentAt);
    assert.equal(
      trace.arrived(JSON.stringify({ v: 1, type: "message_end", sessionId: "a", seq: 3, sentAt })),
      null,
    );
    assert.equal(trace.arrived(JSON.stringify({ v: 1, type: "message_update", delta: "no stamp" })), null);
    trace.handled(span);
    trace.write();
    const [line, ...rest] = (await Deno.readTextFile(path)).trim().split("\n");
    assert.equal(rest.length, 0);
    const [at, arrived, handled] = line.split(" ").map(Number);
    assert.equal(at, sentAt);
    // Stamped and read on clocks aligned to the same wall clock: both after the stamp, in order, and soon.
    assert.ok(arrived >= -0.05 && arrived <= handled && handled < 1000, line);
  } finally {
    await Deno.remove(path);
  }
});

Deno.test("delta trace: a task's value comes back, and the task is written with its label and times", async () => {
  const path = await Deno.makeTempFile({ prefix: "lvmh-trace-test-" });
  try {
    const trace = traceTo(path, false)!;
    const before = wallClock().now();
    const spin = (ms: number) => {
      const until = performance.now() + ms;
      while (performance.now() < until) { /* a task that takes `ms` */ }
      return "done";
    };
    assert.equal(trace.task("commit: SQLite", () => spin(2)), "done");
    trace.task("too short to keep", () => 1);
    assert.throws(() => trace.task("failed", () => (spin(1), JSON.parse("{"))), SyntaxError);
    trace.write();
    const lines = (await Deno.readTextFile(path)).trim().split("\n");
    assert.deepEqual(lines.map((l) => l.split(" ").slice(3).join(" ")), ["commit: SQLite", "failed"]);
    const [marker, start, end] = lines[0].split(" ");
    assert.equal(marker, "@");
    assert.ok(Number(start) >= before - 0.05 && Number(end) - Number(start) >= 2, lines[0]);
  } finally {
    await Deno.remove(path);
  }
});

Deno.test("traced() runs the work as it is when no trace is on", () => {
  assert.equal(traced("anything", () => 42), 42);
});
