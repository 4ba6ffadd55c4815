/**
 * Fault row as a test (smaller counts than `deno task faults`): the disk fills up mid-run. Needs root (it
 * mounts a tmpfs), so it runs in the serial phase of the full suite, which CI runs as root.
 */
import assert from "node:assert/strict";
import { diskFull } from "../../scripts/faults/disk_full.ts";

const root = Deno.uid() === 0;
if (!root) console.warn("faults_disk_full_test: skipped, mounting a tmpfs needs root");

Deno.test({
  name:
    "faults: a full disk closes the plugins' sockets without an ack, and replay repairs it once space returns",
  ignore: !root,
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async () => {
    const r = await diskFull({ plugins: 8, freeKiB: 384 });
    assert.ok(r.failedCommits > 0, "SQLite refused commits (the disk did fill up)");
    assert.ok(r.alive, "the daemon stayed up");
    assert.equal(r.readsOk, r.readsTried, "every read answered while the disk was full");
    // 1011 is the daemon's store-failure close; a witness still writing when it comes may see the connection
    // reset first (1006). Either way what matters is checked next: nothing acked that is not stored.
    assert.ok(
      r.witness.code === 1011 || r.witness.code === 1006,
      `the socket was closed as a store failure: ${r.witness.code} (${r.witness.reason})`,
    );
    assert.ok(r.witness.maxAck >= 1, "the witness had acks before the disk filled");
    assert.ok(r.witness.contiguous, "the witness's stored seqs have no hole");
    assert.ok(
      r.witness.storedAtClose >= r.witness.maxAck,
      `acked ${r.witness.maxAck} but only ${r.witness.storedAtClose} stored`,
    );
    assert.ok(r.witness.lastSent > r.witness.storedAtClose, "some of what it sent was refused, not acked");
    assert.equal(r.audit.stored, r.audit.sent, "every message stored after space returned");
    assert.equal(r.audit.lost, 0);
    assert.equal(r.audit.duplicated, 0);
  },
});
