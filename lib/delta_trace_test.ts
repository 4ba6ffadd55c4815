import assert from "node:assert/strict";
import { traced, traceTo } from "./delta_trace.ts";
import { wallClock } from "./wall_clock.ts";

Deno.test("delta trace: off without a path; stamped deltas traced, other frames not; written as lines", async () => {
  assert.equal(traceTo(undefined), null);
  const path = await Deno.makeTempFile({ prefix: "lvmh-trace-test-" });
  try {
    const trace = traceTo(path, { atExit: false })!;
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
    const [origin, line, ...rest] = (await Deno.readTextFile(path)).trim().split("\n");
    assert.equal(rest.length, 0);
    // performance.now()'s zero on the aligned clock: the process's start, a moment before this test.
    const zero = Number(/^origin (\d+\.\d{3})$/.exec(origin)?.[1]);
    assert.ok(zero <= sentAt && sentAt - zero < 600_000, origin);
    const [at, arrived, handled] = line.split(" ").map(Number);
    assert.equal(at, sentAt);
    // Stamped and read on clocks aligned to the same wall clock: both after the stamp, in order, and soon.
    assert.ok(arrived >= -0.05 && arrived <= handled && handled < 1000, line);
  } finally {
    await Deno.remove(path);
  }
});

Deno.test("delta trace: a task's value comes back, and tasks of 10 µs or more are written with label and times", async () => {
  const path = await Deno.makeTempFile({ prefix: "lvmh-trace-test-" });
  try {
    // A clock the test moves: each task "takes" what the work sets, whatever the machine's load.
    let now = 1000;
    const trace = traceTo(path, { atExit: false, clock: { now: () => now } })!;
    const takes = <T>(ms: number, value: () => T) => () => {
      now += ms;
      return value();
    };
    assert.equal(trace.task("commit: SQLite", takes(2, () => "done")), "done");
    trace.task("too short to keep", takes(0.009, () => 1));
    assert.throws(() => trace.task("failed", takes(0.5, () => JSON.parse("{"))), SyntaxError);
    trace.write();
    const lines = (await Deno.readTextFile(path)).trim().split("\n");
    assert.deepEqual(lines.slice(1), ["@ 1000.000 1002.000 commit: SQLite", "@ 1002.009 1002.509 failed"]);
  } finally {
    await Deno.remove(path);
  }
});

Deno.test("traced() runs the work as it is when no trace is on", () => {
  assert.equal(traced("anything", () => 42), 42);
});
