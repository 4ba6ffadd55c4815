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
} from "../scripts/faults/db_locked.ts";

/**
 * The slowest REST read while the lock is held: one busy-timeout stall (the write gate lets one write per pause
 * try the file), plus what a read costs on this loaded 2-core machine. Without the gate every writer waited
 * on its own and a read took 15 s.
 */
const READ_BOUND_MS = BUSY_TIMEOUT_MS + 500;

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
    // Held long enough for the gate's pause to double (1 s, then 2 s): three tries of the file at most.
    const r = await lockedMidRun({ plugins: 4, holdMs: 4000 });
    assert.ok(r.failedCommits >= 1, `commits refused: ${r.failedCommits}`);
    assert.ok(r.socketsClosed >= 2, `sockets closed: ${r.socketsClosed}`);
    assert.ok(
      r.waitedSeconds >= BUSY_TIMEOUT_MS / 1000 * 0.9 && r.waitedSeconds < BUSY_TIMEOUT_MS / 1000 + 2,
      `the first refused write waited ${r.waitedSeconds} s`,
    );
    // One wait per pause, whatever the number of writers: pauses of 1, 2, 4 … s between tries of the file.
    const tries = Math.ceil(Math.log2(r.holdSeconds + 1)) + 1;
    assert.ok(r.waits <= tries, `${r.waits} commits waited the busy timeout in ${r.holdSeconds} s`);
    assert.ok(
      r.slowestReadMs < READ_BOUND_MS,
      `the slowest REST read while locked took ${r.slowestReadMs.toFixed(0)} ms (bound ${READ_BOUND_MS} ms)`,
    );
    assert.ok(r.alive, "the daemon stayed up");
    assert.equal(r.witness.code, 1011, `the socket was closed as a store failure (${r.witness.reason})`);
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
