/**
 * Fault rows as a test (smaller counts than `deno task faults`): many plugin sockets at once, then all of
 * them redialling after a SIGKILL and restart, each welcomed with the lastSeq it stored.
 */
import assert from "node:assert/strict";
import { storm } from "../scripts/faults/storm.ts";

Deno.test("faults: 300 sockets at once, then a reconnect storm after a SIGKILL", async () => {
  const r = await storm(300);
  assert.equal(r.welcomedAtOnce, 300, "every socket welcomed and its event acked");
  assert.equal(r.welcomedAfterRestart, 300, "every socket welcomed again");
  assert.equal(r.wrongLastSeq, 0, "lastSeq is what each stored");
  assert.ok(r.stormSeconds < 5, `storm took ${r.stormSeconds} s`);
});
