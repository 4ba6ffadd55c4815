import assert from "node:assert/strict";
import { Liveness, promisesHeartbeat } from "./liveness.ts";
import { waitFor } from "../testing/daemon.ts";

const headers = (value?: string) => new Headers(value === undefined ? {} : { "x-lvmh-heartbeat": value });

Deno.test("liveness: a promise is a whole number of ms from 1 to 5,000", () => {
  for (const ok of ["1", "250", "5000"]) assert.equal(promisesHeartbeat(headers(ok)), true, ok);
  for (const bad of [undefined, "", "0", "5001", "15000", "05", "2.5", "1e3", "-1", "5 000", "soon"]) {
    assert.equal(promisesHeartbeat(headers(bad)), false, String(bad));
  }
});

Deno.test("liveness: a silent socket is dead after the silent sweeps, once; a heard one and a stopped one are not", async () => {
  const liveness = new Liveness({ sweepMs: 5, silentSweeps: 4 });
  const deaths: string[] = [];
  liveness.watch(() => deaths.push("silent"));
  const talking = liveness.watch(() => deaths.push("talking"));
  const stopped = liveness.watch(() => deaths.push("stopped"));
  stopped.stop();
  const talk = setInterval(() => talking.heard(), 2);
  try {
    await waitFor(() => deaths.length > 0, "the silent socket dead");
    // Twice the silence again: still one death, and the talking socket is alive.
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(deaths, ["silent"]);
  } finally {
    clearInterval(talk);
    talking.stop(); // the last watched socket gone: no timer is left (the test's sanitizer checks it)
  }
});

Deno.test("liveness: a stall of the daemon's own loop, longer than the silence, costs no socket", async () => {
  const liveness = new Liveness({ sweepMs: 5, silentSweeps: 3 });
  let dead = false;
  const beat = liveness.watch(() => dead = true);
  // The loop is held for 30 sweeps' time; the frame that arrived meanwhile is handled right after.
  const until = performance.now() + 150;
  while (performance.now() < until) { /* a stalled loop */ }
  // The overdue sweep runs first (its deadline is the earlier one), then the frame.
  await new Promise<void>((r) => setTimeout(() => (beat.heard(), r()), 0));
  assert.equal(dead, false, "the late sweep counted once, not the stall's time");
  await waitFor(() => dead, "dead once it stays silent");
  liveness.close();
});
