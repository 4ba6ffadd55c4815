import assert from "node:assert/strict";
import { traceTo } from "./delta_trace.ts";
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
