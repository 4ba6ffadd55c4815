/**
 * Fault row as a test (smaller counts than `deno task faults`): plugin instances streaming through daemon
 * SIGKILLs and restarts lose and duplicate nothing, in SQLite and in a browser that stayed open.
 */
import assert from "node:assert/strict";
import { killRestart } from "../scripts/faults/kill_restart.ts";

Deno.test("faults: 10 plugins through 2 daemon SIGKILLs lose and duplicate nothing", {
  sanitizeOps: false,
  sanitizeResources: false,
}, async () => {
  const r = await killRestart({ plugins: 10, events: 60, kills: 2 });
  assert.equal(r.sent, 600);
  assert.equal(r.stored, r.sent, "every event stored");
  assert.equal(r.lost, 0);
  assert.equal(r.duplicated, 0);
  assert.equal(r.browserDuplicates, 0, "the browser saw no seq twice");
  assert.equal(r.browserMissing, 0, "the browser saw every seq");
});
