import assert from "node:assert/strict";
import {
  BUSY_TIMEOUT_MS,
  FAILURE_PAUSE_MS,
  MAX_FAILURE_PAUSE_MS,
  REFUSED_AT_ONCE,
  WriteGate,
  WriteRefused,
} from "./write_gate.ts";

const locked = () => {
  throw new Error("database is locked");
};

Deno.test("WriteGate: a whole-file refusal makes every write fail at once until the pause passes", () => {
  let now = 0;
  const timeouts: number[] = [];
  const gate = new WriteGate((ms) => timeouts.push(ms), () => now);
  let tried = 0;
  assert.throws(() => gate.run(() => (tried++, locked())), /^Error: database is locked$/);
  assert.match(gate.refusal?.message ?? "", /locked/);
  assert.equal(gate.retryAt, FAILURE_PAUSE_MS);
  // Meanwhile no writer reaches the file (each would wait the busy timeout with the event loop stopped).
  for (let i = 0; i < 5; i++) assert.throws(() => gate.run(() => tried++), WriteRefused);
  assert.equal(tried, 1);
  assert.equal(gate.tryRun(() => void tried++), false);
  // The gate closed, the file's busy timeout went to 0: a try after the pause does not wait for the lock.
  assert.deepEqual(timeouts, [0]);
  now = FAILURE_PAUSE_MS;
  assert.equal(gate.refusal, null);
  assert.equal(gate.run(() => ++tried), 2);
  assert.equal(gate.refusal, null);
  assert.deepEqual(timeouts, [0, BUSY_TIMEOUT_MS]);
  // Open again: a write that succeeds touches the timeout no more.
  gate.run(() => {});
  assert.deepEqual(timeouts, [0, BUSY_TIMEOUT_MS]);
});

Deno.test("WriteGate: a try after the pause that is refused again says it did not wait", () => {
  let now = 0;
  const gate = new WriteGate(() => {}, () => now);
  assert.throws(() => gate.run(locked), (e) => !(e instanceof WriteRefused));
  now = gate.retryAt;
  assert.throws(
    () => gate.run(locked),
    (e) => e instanceof WriteRefused && e.message.includes(REFUSED_AT_ONCE),
  );
});

Deno.test("WriteGate: the pause doubles with each refusal in a row, up to its bound, and a success resets it", () => {
  let now = 0;
  const gate = new WriteGate(() => {}, () => now);
  const pauses: number[] = [];
  for (let i = 0; i < 6; i++) {
    assert.throws(() => gate.run(locked));
    pauses.push(gate.retryAt - now);
    now = gate.retryAt;
  }
  const p = FAILURE_PAUSE_MS;
  assert.deepEqual(pauses, [p, 2 * p, 4 * p, 8 * p, MAX_FAILURE_PAUSE_MS, MAX_FAILURE_PAUSE_MS]);
  gate.run(() => {});
  assert.throws(() => gate.run(locked));
  assert.equal(gate.retryAt - now, FAILURE_PAUSE_MS);
});

Deno.test("WriteGate: an error of the rows, not the file, leaves the gate open", () => {
  const gate = new WriteGate(() => {}, () => 0);
  assert.throws(() =>
    gate.run(() => {
      throw new Error("UNIQUE constraint failed");
    })
  );
  assert.equal(gate.refusal, null);
  assert.throws(() =>
    gate.tryRun(() => {
      throw new Error("no such table");
    }), /no such table/);
});

Deno.test("WriteGate: a write nested in another is one write (one refusal, one pause)", () => {
  const gate = new WriteGate(() => {}, () => 0);
  assert.throws(() => gate.run(() => gate.run(locked)));
  assert.equal(gate.retryAt, FAILURE_PAUSE_MS);
});
