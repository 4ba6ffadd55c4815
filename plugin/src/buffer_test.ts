/** The event buffer on its own: bounds, loss accounting, replay after a welcome. */
import assert from "node:assert/strict";
import { EventBuffer, type EventFrame } from "./buffer.ts";

const ev = (seq: number, type = "agent_start"): EventFrame => ({
  v: 1,
  sessionId: "s",
  seq,
  ts: 0,
  type,
});
Deno.test("EventBuffer drops the oldest past its bound and counts only unsent ones as lost", () => {
  const b = new EventBuffer({ maxCount: 3 });
  b.push(ev(1), 10);
  b.markSent(); // seq 1 went out on a live socket: dropping it later is no loss
  for (let s = 2; s <= 5; s++) b.push(ev(s), 10);
  assert.equal(b.length, 3);
  assert.equal(b.first?.seq, 3);
  assert.deepEqual(b.takeOverflow(), {
    dropped: 1,
    firstDroppedSeq: 2,
    lastDroppedSeq: 2,
  });
  assert.equal(b.takeOverflow(), null);
  assert.equal(b.has(4), true);
  assert.equal(b.has(2), false);
});

Deno.test("EventBuffer.rewind() forgets what the daemon has and sends the rest again, without deltas", () => {
  const b = new EventBuffer();
  for (let s = 1; s <= 4; s++) {
    b.push(ev(s, s === 3 ? "message_update" : "agent_start"), 10);
  }
  b.markSent(4);
  assert.equal(b.unsent, 0);
  b.rewind(1);
  assert.deepEqual([0, 1].map((i) => b.unsentAt(i)?.seq), [2, 4]);
  assert.equal(b.chars, 20);
  b.trim(4);
  assert.equal(b.length, 0);
});
