/**
 * Fault rows as tests (smaller counts than `deno task faults`): the database locked by another process, at
 * start and mid-run. No root needed.
 */
import assert from "node:assert/strict";
import {
  BUSY_TIMEOUT_MS,
  lockedMidRun,
  lockedStart,
  OPEN_BUSY_TIMEOUT_MS,
  READ_BOUND_MS,
} from "../../scripts/faults/db_locked.ts";

Deno.test("faults: a database locked at start exits 2 with one line after the busy timeout", async () => {
  const r = await lockedStart();
  assert.equal(r.code, 2, r.line);
  assert.match(r.line, /^lvmh: cannot open the database in .*: database is locked$/);
  assert.ok(
    r.seconds >= OPEN_BUSY_TIMEOUT_MS / 1000 * 0.9,
    `gave up after ${r.seconds} s, before the busy timeout`,
  );
});

Deno.test(
  "faults: a lock held mid-run closes sockets without an ack, reads keep answering, replay repairs it",
  {
    sanitizeOps: false,
    sanitizeResources: false,
  },
  async () => {
    // Held long enough for the gate's pause to double to its bound (0.25, 0.5, 1, 2 s): a try after each.
    const r = await lockedMidRun({ plugins: 4, holdMs: 4000 });
    assert.ok(r.failedCommits >= 1, `commits refused: ${r.failedCommits}`);
    assert.ok(r.socketsClosed >= 2, `sockets closed: ${r.socketsClosed}`);
    assert.ok(
      r.waitedSeconds >= BUSY_TIMEOUT_MS / 1000 * 0.9 && r.waitedSeconds < BUSY_TIMEOUT_MS / 1000 + 2,
      `the first refused write waited ${r.waitedSeconds} s`,
    );
    // One wait in all, whatever the number of writers and however long the lock is held (it may have been a
    // glance or session row write that waited, which the log does not count).
    assert.ok(r.waits <= 1, `${r.waits} commits waited the busy timeout in ${r.holdSeconds} s`);
    assert.ok(
      r.slowestReadMs < READ_BOUND_MS,
      `the slowest REST read while locked took ${r.slowestReadMs.toFixed(0)} ms (bound ${READ_BOUND_MS} ms)`,
    );
    assert.equal(r.readsOk, r.readsTried, "every read while locked answered with the list");
    assert.ok(r.alive, "the daemon stayed up");
    // 1011 is the daemon's store-failure close; a witness still writing when it comes may see the connection
    // reset first (1006). Either way what matters is checked next: nothing acked that is not stored.
    assert.ok(
      r.witness.code === 1011 || r.witness.code === 1006,
      `the socket was closed as a store failure: ${r.witness.code} (${r.witness.reason})`,
    );
    assert.ok(r.witness.contiguous, "the witness's stored seqs have no hole");
    assert.ok(
      r.witness.storedAtClose >= r.witness.maxAck,
      `acked ${r.witness.maxAck} but only ${r.witness.storedAtClose} stored`,
    );
    assert.equal(r.audit.stored, r.audit.sent, "every message stored after the lock went");
    assert.equal(r.audit.lost, 0);
    assert.equal(r.audit.duplicated, 0);
  },
);
