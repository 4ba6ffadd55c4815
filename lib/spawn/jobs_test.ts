import assert from "node:assert/strict";
import { MAX_JOBS, SpawnJobs } from "./jobs.ts";
import type { SpawnJob } from "../protocol.ts";

const job = (n: number, state: SpawnJob["state"] = "running"): SpawnJob => ({
  id: `j${n}`,
  repo: "g/p",
  branch: null,
  state,
  sessionId: `s${n}`,
  containerId: null,
  error: null,
  createdAt: n,
  updatedAt: n,
});

Deno.test("SpawnJobs publishes every change, newest first, and drops old finished jobs first", () => {
  const published: string[][] = [];
  const jobs = new SpawnJobs((list) => published.push(list.map((j) => j.id)));
  jobs.add(job(1, "failed"));
  jobs.add(job(2));
  assert.deepEqual(published.at(-1), ["j2", "j1"]);
  jobs.update(jobs.list()[0], "stopped", { error: null });
  assert.equal(published.length, 3);
  assert.equal(jobs.forSession("s2")[0].state, "stopped");
  for (let n = 3; n <= MAX_JOBS + 2; n++) jobs.add(job(n));
  const ids = jobs.list().map((j) => j.id);
  assert.equal(ids.length, MAX_JOBS);
  // j1 (failed) went first, then j2 (stopped); every running job stayed
  assert.ok(!ids.includes("j1") && !ids.includes("j2"), String(ids.slice(-3)));
  assert.equal(jobs.inState("running").length, MAX_JOBS);
});
