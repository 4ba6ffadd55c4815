/** The dead-daemon check on its own, with short timings. */
import assert from "node:assert/strict";
import { Heartbeat } from "./heartbeat.ts";

const until = async (cond: () => boolean, ms = 3000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 5));
  }
};

Deno.test("Heartbeat pings, stays alive while frames come, and calls a silent daemon dead once", async () => {
  let pings = 0, dead = 0;
  const hb = new Heartbeat(() => pings++, () => dead++, { pingMs: 20, deadMs: 150 });
  hb.start();
  const alive = setInterval(() => hb.heard(), 30); // a daemon that answers
  try {
    await until(() => pings >= 10);
    assert.equal(dead, 0, "frames kept it alive past several dead periods");
  } finally {
    clearInterval(alive);
  }
  const silentFrom = Date.now();
  await until(() => dead === 1);
  assert.ok(Date.now() - silentFrom >= 100, "not before the silence lasted");
  const after = pings;
  await new Promise((r) => setTimeout(r, 60));
  assert.equal(pings, after, "no pings once dead");
  assert.equal(dead, 1);
  hb.stop();
});
