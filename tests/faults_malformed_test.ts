/**
 * Fault row as a test (smaller counts than `deno task faults`): malformed frames from another process leave
 * the daemon up, under its RSS bound, and still delivering a healthy session's deltas.
 */
import assert from "node:assert/strict";
import { malformed, RSS_BOUND_MIB } from "../scripts/faults/malformed.ts";

Deno.test("faults: 2,000 malformed frames leave the daemon up and bounded", async () => {
  const r = await malformed(2000);
  assert.ok(r.alive, "the daemon still answers");
  assert.ok(r.rssPeak < RSS_BOUND_MIB, `RSS peak ${r.rssPeak} MiB`);
  assert.ok(r.closes > 0, "the daemon closed sockets that broke the transport's rules");
  assert.ok(Number.isFinite(r.duringP99), "the healthy session's deltas kept arriving during the attack");
});
