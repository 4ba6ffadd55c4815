/**
 * Workers outlive the daemon. On start, the workers the backend still runs for lvmh are found again by label
 * and listed as jobs; while the daemon runs, jobs whose worker exited on its own (or was removed by hand) are
 * marked `stopped`.
 */
import type { ManagedWorker, SpawnBackend } from "./backend.ts";
import type { SpawnJobs } from "./jobs.ts";
import type { SpawnJob } from "../protocol.ts";

/** List the workers found by label as jobs, after sweeping crash leftovers. Never throws (it logs). */
export async function recoverJobs(
  backend: Pick<SpawnBackend, "listWorkers" | "sweep">,
  jobs: SpawnJobs,
): Promise<void> {
  try {
    await backend.sweep();
    for (const w of await backend.listWorkers()) {
      if (jobs.forSession(w.sessionId).length > 0) continue;
      jobs.add({
        id: crypto.randomUUID(),
        repo: w.repo,
        branch: null,
        state: w.running ? "running" : "stopped",
        sessionId: w.sessionId,
        containerId: w.id,
        error: null,
        createdAt: w.createdAt,
        updatedAt: w.createdAt,
      });
    }
  } catch (error) {
    // Docker may be down at start: the spawn routes say so when asked, the rest of the daemon works.
    console.warn(`lvmh: could not list containers on start: ${(error as Error).message}`);
  }
}

/**
 * Mark `running` jobs whose worker is no longer running as `stopped`, and hand each to `ended` (which tells a
 * crash from a stop) with the workers listed.
 * @throws what the backend's list threw (the caller retries on its next round).
 */
export async function reconcileJobs(
  backend: Pick<SpawnBackend, "listWorkers">,
  jobs: SpawnJobs,
  ended: (job: SpawnJob, workers: ManagedWorker[]) => Promise<void> = () => Promise.resolve(),
): Promise<void> {
  const running = jobs.inState("running");
  if (running.length === 0) return;
  const workers = await backend.listWorkers();
  const live = new Set(workers.filter((w) => w.running).map((w) => w.id));
  for (const job of running) {
    if (job.containerId && !live.has(job.containerId)) {
      jobs.update(job, "stopped");
      await ended(job, workers).catch((error) => {
        console.warn(`lvmh: could not settle the end of ${job.sessionId}'s worker: ${error?.message}`);
      });
    }
  }
}
