import assert from "node:assert/strict";
import { reconcileJobs } from "./recovery.ts";
import { SpawnJobs } from "./jobs.ts";
import type { ManagedWorker } from "./backend.ts";
import type { SpawnJob } from "../protocol.ts";

const job = (id: string, containerId: string): SpawnJob => ({
  id,
  repo: "g/p",
  branch: null,
  state: "running",
  sessionId: `s-${id}`,
  containerId,
  error: null,
  createdAt: 1,
  updatedAt: 1,
});

Deno.test("reconcileJobs() stops the jobs whose worker exited or vanished, and only those", async () => {
  const jobs = new SpawnJobs(() => {});
  for (const [id, c] of [["alive", "c-alive"], ["exited", "c-exited"], ["gone", "c-gone"]]) {
    jobs.add(job(id, c));
  }
  const workers: ManagedWorker[] = [
    { id: "c-alive", sessionId: "s-alive", repo: "g/p", running: true, createdAt: 1 },
    { id: "c-exited", sessionId: "s-exited", repo: "g/p", running: false, createdAt: 1 },
  ];
  let lists = 0;
  const backend = { listWorkers: () => (lists++, Promise.resolve(workers)) };
  await reconcileJobs(backend, jobs);
  const states = Object.fromEntries(jobs.list().map((j) => [j.id, j.state]));
  assert.deepEqual(states, { alive: "running", exited: "stopped", gone: "stopped" });
  await reconcileJobs(
    { listWorkers: () => Promise.reject(new Error("must not be asked")) },
    new SpawnJobs(() => {}),
  );
  assert.equal(lists, 1, "no running job: the backend is not asked");
});
