/**
 * Settling a worker that is no longer running: its state moves to `stopped` (or `crashed`, with how it ended),
 * its last logs are kept and the worker is removed. Three ways lead here: a job of this daemon whose worker
 * the periodic check no longer finds running (`ended`), the states left `starting` or `running` by a daemon
 * that stopped (`settleStates`, at start), and, with replicas, every worker whose state says it runs while the
 * backend says it does not (`watchAll`, on the leader), whichever replica started it: a replica that died
 * leaves its workers to the others.
 *
 * With replicas each move is a compare-and-set on the state read, so of two replicas settling the same worker
 * one moves it, removes it and tells of a crash; the other leaves it alone. On the single daemon the moves are
 * written as before (no `from`).
 */
import type { SpawnJob } from "../protocol.ts";
import { type ManagedWorker, MAX_LOG_LINES, type SpawnBackend } from "./backend.ts";
import { endReason, type WorkerEnd } from "./containers.ts";
import type { SpawnJobs } from "./jobs.ts";
import type { ContainerMove, WorkerStates } from "./worker_states.ts";
import type { ContainerRow, ContainerState } from "../storage/session_state_log.ts";

/**
 * A `starting` state with no worker yet is another replica's spawn under way (it makes the worker after the
 * state); only one this old was left by a replica that died mid-spawn. A spawn's longest step (an image build
 * on Docker, a Pod's start timeout on Kubernetes) stays well within it.
 */
export const STARTING_STALE_MS = 15 * 60_000;

export interface SettleDeps {
  backend: Pick<SpawnBackend, "listWorkers" | "workerStatus" | "workerLogs" | "removeWorker">;
  jobs: SpawnJobs;
  containers: WorkerStates;
  /** Sessions being stopped or discarded here: their worker's end is not a crash. */
  stopping: ReadonlySet<string>;
  onCrash?(sessionId: string, end: WorkerEnd): void;
}

/** The moves `from` guards with replicas; none on the single daemon (its writes stay as they were). */
export function guarded(containers: WorkerStates, from: readonly (ContainerState | null)[]): ContainerMove {
  return containers.shared ? { from } : {};
}

const inProgress = (j: SpawnJob) =>
  j.state === "queued" || j.state === "cloning" || j.state === "building" || j.state === "starting";

/** Build the three ways of settling over one daemon's jobs and states. */
export function createSettler(deps: SettleDeps) {
  const { backend, jobs, containers, stopping } = deps;

  /** Move a session whose workers (`theirs`, none running) ended; remove them once the move is made. */
  const settleRow = async (row: ContainerRow, theirs: ManagedWorker[], tell: boolean) => {
    let logs: string | null | undefined;
    let status: Awaited<ReturnType<SpawnBackend["workerStatus"]>> = null;
    for (const w of theirs) {
      logs = await backend.workerLogs(w.id, MAX_LOG_LINES).catch(() => undefined);
      if (tell) status ??= await backend.workerStatus(w.id).catch(() => null);
    }
    if (stopping.has(row.sessionId)) return;
    const crashed = status !== null && (status.exitCode !== 0 || status.oom);
    const end = crashed
      ? { exitCode: status!.exitCode, reason: endReason(status!.exitCode, status!.oom) }
      : null;
    const moved = await containers.set(row.sessionId, row.repo, end ? "crashed" : "stopped", {
      ...guarded(containers, [row.state]),
      ...(end ? { end } : {}),
      ...(logs === undefined ? {} : { logs }),
    });
    if (!moved) return; // another replica settled it
    for (const w of theirs) await backend.removeWorker(w.id);
    for (const job of jobs.forSession(row.sessionId)) {
      if (job.state === "running") jobs.update(job, "stopped");
    }
    if (end) deps.onCrash?.(row.sessionId, end);
  };

  return {
    /** A running job's worker is no longer running: keep its logs, remove it, and say how it ended. */
    async ended(job: SpawnJob, workers: ManagedWorker[] = []): Promise<void> {
      if (stopping.has(job.sessionId) || !job.containerId) return;
      // Another worker of the session runs (another replica resumed it): this one's end is not the session's.
      if (workers.some((w) => w.sessionId === job.sessionId && w.running)) return;
      const id = job.containerId;
      const status = await backend.workerStatus(id);
      const logs = status ? await backend.workerLogs(id, MAX_LOG_LINES).catch(() => null) : null;
      if (status) await backend.removeWorker(id);
      if (stopping.has(job.sessionId)) return;
      const from = guarded(containers, ["starting", "running"]);
      const crashed = status !== null && (status.exitCode !== 0 || status.oom);
      if (!crashed) {
        await containers.set(job.sessionId, job.repo, "stopped", logs === null ? from : { ...from, logs });
        return;
      }
      const end = { exitCode: status.exitCode, reason: endReason(status.exitCode, status.oom) };
      if (await containers.set(job.sessionId, job.repo, "crashed", { ...from, end, logs })) {
        deps.onCrash?.(job.sessionId, end);
      }
    },

    /**
     * After a start: a session last seen starting or running whose worker is gone (or ended while no daemon
     * watched, as when the host or the engine restarted) is `stopped`, resumable; a worker still running with
     * no state (spawned before states were kept) is `running`. @returns false when the backend did not answer
     */
    async settleStates(): Promise<boolean> {
      let rows: ContainerRow[];
      let workers: ManagedWorker[];
      try {
        // The states before the workers: a state read `running` had its worker made before the list.
        rows = await containers.load();
        workers = await backend.listWorkers();
      } catch {
        return false; // the backend (or the database) is down: the periodic check tries again
      }
      const running = new Set(workers.filter((w) => w.running).map((w) => w.sessionId));
      const known = new Set(rows.map((r) => r.sessionId));
      for (const w of workers) {
        if (!w.running || known.has(w.sessionId)) continue;
        await containers.set(w.sessionId, w.repo, "running", guarded(containers, [null]));
        known.add(w.sessionId);
      }
      for (const row of rows) {
        if ((row.state !== "starting" && row.state !== "running") || running.has(row.sessionId)) continue;
        if (jobs.forSession(row.sessionId).some(inProgress)) continue;
        if (containers.shared && row.state === "starting" && Date.now() - row.updatedAt < STARTING_STALE_MS) {
          continue;
        }
        await settleRow(row, workers.filter((x) => x.sessionId === row.sessionId), false);
      }
      return true;
    },

    /**
     * With replicas, on the leader: every worker whose state says it runs while the backend says it does not
     * (it ended, or its replica died before it noticed) is settled, a crash told. @throws what the backend or
     * the database threw (the next round tries again)
     */
    async watchAll(): Promise<void> {
      const rows = (await containers.load()).filter((r) => r.state === "starting" || r.state === "running");
      if (rows.length === 0) return;
      const workers = await backend.listWorkers();
      const running = new Set(workers.filter((w) => w.running).map((w) => w.sessionId));
      for (const row of rows) {
        if (running.has(row.sessionId) || stopping.has(row.sessionId)) continue;
        if (jobs.forSession(row.sessionId).some(inProgress)) continue;
        if (row.state === "starting" && Date.now() - row.updatedAt < STARTING_STALE_MS) continue;
        await settleRow(row, workers.filter((x) => x.sessionId === row.sessionId), true);
      }
    },
  };
}
