/**
 * Fault rows as tests (smaller counts than `deno task faults`): the database locked by another process, at
 * start and mid-run. No root needed.
 */
import assert from "node:assert/strict";
import { BUSY_TIMEOUT_MS, lockedMidRun, lockedStart } from "../scripts/faults/db_locked.ts";

Deno.test("faults: a database locked at start exits 2 with one line after the busy timeout", async () => {
  const r = await lockedStart();
  assert.equal(r.code, 2, r.line);
  assert.match(r.line, /^lvmh: cannot open the database in .*: database is locked$/);
  assert.ok(
    r.seconds >= BUSY_TIMEOUT_MS / 1000 * 0.9,
    `gave up after ${r.seconds} s, before the busy timeout`,
  );
});

Deno.test(
  "faults: a lock held mid-run closes sockets without an ack, and replay repairs it after the release",
  {
    sanitizeOps: false,
    sanitizeResources: false,
  },
  async () => {
    const r = await lockedMidRun({ plugins: 4, holdMs: BUSY_TIMEOUT_MS + 1000 });
    assert.ok(r.failedCommits >= 1, `commits refused: ${r.failedCommits}`);
    assert.ok(r.socketsClosed >= 2, `sockets closed: ${r.socketsClosed}`);
    assert.ok(
      r.waitedSeconds >= BUSY_TIMEOUT_MS / 1000 * 0.9 && r.waitedSeconds < BUSY_TIMEOUT_MS / 1000 + 2,
      `the first refused write waited ${r.waitedSeconds} s`,
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
