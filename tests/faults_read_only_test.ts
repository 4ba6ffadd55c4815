/**
 * Fault row as a test: a read-only data dir at start ends the daemon with exit 2 and one clear line.
 */
import assert from "node:assert/strict";
import { readOnlyStart } from "../scripts/faults/read_only.ts";

Deno.test("faults: a read-only data dir exits 2 with one line", async () => {
  const r = await readOnlyStart();
  assert.equal(r.code, 2, r.line);
  assert.match(r.line, /^lvmh: cannot open the database in .*: unable to open database file/);
  assert.ok(!r.line.includes("    at "), "no stack trace");
});
