/**
 * The spawner: starts pi sessions in workers on GitLab repositories, keeps the job list, finds its workers
 * again after a restart and stops them. The steps live in `lib/spawn/` (image gate, repository lock, start,
 * pipeline, recovery); where workers run is a `SpawnBackend` (the Docker engine today). Its dependencies are
 * the narrow `SpawnDeps`, not the daemon's core, so nothing here imports `lib/app.ts`.
 */
import type { Config } from "./config.ts";
import { DatabaseSync } from "node:sqlite";
import { ConflictError, isDomainError, NotFoundError, UpstreamError } from "./errors.ts";
import type { AskSet, SessionInfo, SpawnBody, SpawnJob } from "./protocol.ts";
import { type CloneCredential, MAX_LOG_LINES, type SpawnBackend, StorageGoneError } from "./spawn/backend.ts";
import {
  type ContainerRow,
  ContainerStates,
  endReason,
  lastLines,
  type WorkerEnd,
} from "./spawn/containers.ts";
import { SpawnJobs } from "./spawn/jobs.ts";
import { createPipeline } from "./spawn/pipeline.ts";
import { reconcileJobs, recoverJobs } from "./spawn/recovery.ts";
import type { WorkspaceBook } from "./workspaces.ts";

/** Starts agent sessions in containers. */
export interface Spawner {
  /**
   * Run a spawn job up to a started container.
   * @throws {UnavailableError} when Docker is unreachable (before any job exists); {UpstreamError} when the
   * image build, clone or container start failed (the job is then `failed` with the engine's message);
   * {ConflictError} when `options.sessionId` already has a live job. On Kubernetes it answers once the Pod is
   * created: a later failure (the clone, an image pull, unschedulable past the timeout, OOM) leaves the job
   * `failed` with the message and the session's storage removed.
   * @param options.sessionId the new session's id, when the caller allocated it (a hook answers with it before
   * the spawn ran, and runs the spawn again under it after a restart).
   */
  spawn(
    body: SpawnBody,
    options?: { sessionId?: string },
  ): Promise<{ sessionId: string; containerId: string; jobId: string }>;
  /** Every known job, newest first. */
  jobs(): SpawnJob[];
  /**
   * Stop and remove a session's worker. Its storage (working copy, pi's session file, the plugin's seq
   * file) stays: the session is `stopped`, and can be resumed or discarded.
   * @throws {NotFoundError} when no lvmh container belongs to the session; {UnavailableError} without Docker.
   */
  stopSession(sessionId: string): Promise<void>;
  /**
   * Start a new worker on a stopped or crashed session's storage (a job, followed like a spawn); pi reopens
   * its session file there.
   * @throws {ConflictError} when the session was not spawned or its worker runs; {StorageGoneError} when its
   * storage is gone; {UnavailableError} without Docker; {UpstreamError} when the worker did not start.
   */
  resume(sessionId: string): Promise<{ jobId: string; containerId: string }>;
  /**
   * Remove a stopped or crashed session's worker (if any) and its storage, and forget its worker state.
   * A session that was never spawned has nothing to remove.
   * @throws {ConflictError} while its worker runs; {UnavailableError} without Docker.
   */
  discard(sessionId: string): Promise<void>;
  /**
   * A spawned session's worker's last `tail` log lines: the running worker's, else those kept when it ended.
   * @throws {NotFoundError} when there are none (never spawned, or discarded).
   */
  logs(sessionId: string, tail: number): Promise<string>;
  /**
   * A spawned session's work as a git bundle: its branch from its base, and its uncommitted changes as one
   * more commit on top (the working copy is only read).
   * @throws {NotFoundError} when the session has no working copy record; {StorageGoneError} when its copy is
   * gone; {UpstreamError} when git failed.
   */
  bundle(sessionId: string): Promise<Uint8Array>;
  /** A session's worker state, or undefined for a session that was never spawned. */
  container(sessionId: string): ContainerRow | undefined;
  /** The clone credential for a worker that clones for itself (Kubernetes), once; null otherwise. */
  cloneCredential?(sessionId: string): CloneCredential | null;
  /** Check running jobs against the backend now, as the periodic check does (a crash is noticed). */
  check(): Promise<void>;
  /** Find lvmh's containers again by label (daemon restart). Never throws. */
  recover(): Promise<void>;
  /** Resolves once the start-up recovery is done (the job list then has the workers a crash left running). */
  recovered(): Promise<void>;
  /** Stop the periodic check and wait for the start-up recovery. */
  shutdown(): Promise<void>;
}

/** Everything the spawner needs from the rest of the daemon. */
export interface SpawnDeps {
  config: Pick<Config, "port" | "workerUrl">;
  /** Where workers run. */
  backend: SpawnBackend;
  /** Called with the whole job list after every change (the daemon sends it as `spawn_status`). */
  publishJobs(jobs: SpawnJob[]): void;
  /** List a spawned session offline, with the tools that need approval; never overwrites a hello. */
  registerSession(info: SessionInfo, ask: AskSet | undefined): void;
  /** Clone URLs and the clone credential (GitLab). */
  repos: { cloneUrl(repo: string): string; credential(): string | null };
  /** The session-scoped token a worker presents instead of the daemon's. */
  agentToken(sessionId: string): Promise<string>;
  /** Each session's working copy record (`app.workspaces`). */
  workspaces: Pick<WorkspaceBook, "record" | "get">;
  /** Where worker states are kept (the daemon's database); an in-memory table without it. */
  containers?: ContainerStates;
  /** A worker ended by itself with a failure (non-zero exit, OOM kill). */
  onCrash?(sessionId: string, end: WorkerEnd): void;
}

/** How often running jobs are checked against the backend (a worker may exit on its own). */
const RECONCILE_MS = 5000;

/** Build the spawner; it starts finding its workers again at once, in the background. */
export function createSpawner(deps: SpawnDeps): Spawner {
  const { backend, config } = deps;
  const jobs = new SpawnJobs(deps.publishJobs);
  const run = createPipeline({
    backend,
    jobs,
    agentUrl: config.workerUrl ?? `ws://127.0.0.1:${config.port}/agent/ws`,
    registerSession: deps.registerSession,
    repos: deps.repos,
    agentToken: deps.agentToken,
    workspaces: deps.workspaces,
  });
  const containers = deps.containers ?? new ContainerStates(new DatabaseSync(":memory:"));
  /** Sessions being stopped or discarded: their worker's end is not a crash. */
  const stopping = new Set<string>();

  /** A running job's worker is no longer running: keep its logs, remove it, and say how it ended. */
  const ended = async (job: SpawnJob) => {
    if (stopping.has(job.sessionId) || !job.containerId) return;
    const id = job.containerId;
    const status = await backend.workerStatus(id);
    const logs = status ? await backend.workerLogs(id, MAX_LOG_LINES).catch(() => null) : null;
    if (status) await backend.removeWorker(id);
    if (stopping.has(job.sessionId)) return;
    const crashed = status !== null && (status.exitCode !== 0 || status.oom);
    if (!crashed) {
      containers.set(job.sessionId, job.repo, "stopped", logs === null ? {} : { logs });
      return;
    }
    const end = { exitCode: status.exitCode, reason: endReason(status.exitCode, status.oom) };
    containers.set(job.sessionId, job.repo, "crashed", { end, logs });
    deps.onCrash?.(job.sessionId, end);
  };

  /**
   * After a restart: a session the daemon last saw starting or running whose worker is gone (or ended while
   * the daemon was down, as when the host or the engine restarted) is `stopped`, resumable; a worker still
   * running with no state (spawned before states were kept) is `running`.
   */
  let settled = false;
  const settleStates = async () => {
    let workers;
    try {
      workers = await backend.listWorkers();
    } catch {
      return; // Docker down: the periodic check tries again
    }
    settled = true;
    const running = new Set(workers.filter((w) => w.running).map((w) => w.sessionId));
    for (const w of workers) {
      if (w.running && !containers.get(w.sessionId)) containers.set(w.sessionId, w.repo, "running");
    }
    for (const row of containers.list()) {
      if ((row.state !== "starting" && row.state !== "running") || running.has(row.sessionId)) continue;
      if (
        jobs.forSession(row.sessionId).some((j) =>
          j.state === "queued" || j.state === "cloning" ||
          j.state === "building" || j.state === "starting"
        )
      ) continue;
      let logs: string | null | undefined;
      for (const w of workers.filter((x) => x.sessionId === row.sessionId)) {
        logs = await backend.workerLogs(w.id, MAX_LOG_LINES).catch(() => undefined);
        await backend.removeWorker(w.id);
      }
      containers.set(row.sessionId, row.repo, "stopped", logs === undefined ? {} : { logs });
    }
  };

  const recover = () => recoverJobs(backend, jobs).then(settleStates);

  // Containers outlive the daemon; find them again in the background (Docker may be down: that is fine).
  const recovered = recover();
  let reconciling: Promise<void> | null = null;
  const check = () =>
    reconciling ??= reconcileJobs(backend, jobs, ended)
      .then(() => settled ? undefined : recovered.then(settleStates))
      .catch(() => {})
      .finally(() => reconciling = null);
  const timer = setInterval(check, RECONCILE_MS);
  Deno.unrefTimer(timer);

  return {
    async spawn(body, options = {}) {
      const wanted = options.sessionId;
      const live = (j: SpawnJob) => j.state !== "failed" && j.state !== "stopped";
      if (wanted !== undefined && jobs.forSession(wanted).some(live)) {
        throw new ConflictError(`session "${wanted}" already has a spawn job`);
      }
      await backend.ping();
      const now = Date.now();
      const job: SpawnJob = {
        id: crypto.randomUUID(),
        repo: body.repo,
        branch: body.branch ?? null,
        state: "queued",
        sessionId: wanted ?? crypto.randomUUID(),
        containerId: null,
        error: null,
        createdAt: now,
        updatedAt: now,
      };
      jobs.add(job);
      containers.set(job.sessionId, job.repo, "starting");
      try {
        // Kubernetes answers once the Pod is created; how its start ends is followed on the job.
        const containerId = await run(job, body.ask, {
          onStarted(error) {
            if (error) containers.delete(job.sessionId);
            else containers.set(job.sessionId, job.repo, "running");
          },
        });
        if (!backend.awaitStart) containers.set(job.sessionId, job.repo, "running");
        return { sessionId: job.sessionId, containerId, jobId: job.id };
      } catch (error) {
        // The failed spawn removed the session's storage: nothing is left to resume.
        containers.delete(job.sessionId);
        // Backends throw domain kinds; anything else (a token or URL helper) is still a failed spawn.
        throw isDomainError(error) ? error : new UpstreamError(String((error as Error)?.message ?? error));
      }
    },
    async resume(sessionId) {
      const row = containers.get(sessionId);
      if (!row) throw new ConflictError(`Session "${sessionId}" was not spawned: it has no worker to resume`);
      const live = (j: SpawnJob) => j.state !== "failed" && j.state !== "stopped";
      if (row.state === "starting" || row.state === "running" || jobs.forSession(sessionId).some(live)) {
        throw new ConflictError(`Session "${sessionId}" has a running worker`);
      }
      await backend.ping();
      if (!await backend.storageExists(sessionId)) {
        throw new StorageGoneError(`Session "${sessionId}"'s storage is gone: it can no longer be resumed`);
      }
      const now = Date.now();
      const job: SpawnJob = {
        id: crypto.randomUUID(),
        repo: row.repo,
        branch: (await deps.workspaces.get(sessionId))?.baseBranch ?? null,
        state: "queued",
        sessionId,
        containerId: null,
        error: null,
        createdAt: now,
        updatedAt: now,
      };
      jobs.add(job);
      const before = row.state;
      containers.set(sessionId, row.repo, "starting");
      try {
        const containerId = await run(job, undefined, { resume: true });
        containers.set(sessionId, row.repo, "running");
        return { jobId: job.id, containerId };
      } catch (error) {
        // The storage is kept: the session stays as it was, and may be resumed again.
        containers.set(sessionId, row.repo, before === "crashed" ? "stopped" : before);
        throw isDomainError(error) ? error : new UpstreamError(String((error as Error)?.message ?? error));
      }
    },
    jobs: () => jobs.list(),
    check,
    async stopSession(sessionId) {
      stopping.add(sessionId);
      try {
        const logs = await backend.stopSession(sessionId);
        for (const job of jobs.forSession(sessionId)) if (job.state !== "failed") jobs.update(job, "stopped");
        const repo = containers.get(sessionId)?.repo ?? jobs.forSession(sessionId)[0]?.repo ?? "";
        containers.set(sessionId, repo, "stopped", { logs });
      } finally {
        stopping.delete(sessionId);
      }
    },
    async discard(sessionId) {
      const row = containers.get(sessionId);
      if (!row) return;
      if (row.state === "starting" || row.state === "running") {
        throw new ConflictError(`Session "${sessionId}"'s worker runs: stop it first`);
      }
      stopping.add(sessionId);
      try {
        await backend.stopSession(sessionId).catch((error) => {
          if (!(error instanceof NotFoundError)) throw error;
        });
        await backend.removeSessionStorage(sessionId);
        containers.delete(sessionId);
      } finally {
        stopping.delete(sessionId);
      }
    },
    async logs(sessionId, tail) {
      const job = jobs.forSession(sessionId).find((j) => j.state === "running" && j.containerId);
      if (job) {
        try {
          return await backend.workerLogs(job.containerId!, tail);
        } catch (error) {
          if (!(error instanceof NotFoundError)) throw error;
        }
      }
      const kept = containers.logs(sessionId);
      if (kept == null) throw new NotFoundError(`Session "${sessionId}" has no worker logs`);
      return lastLines(kept, tail);
    },
    container: (sessionId) => containers.get(sessionId),
    cloneCredential: (sessionId) => backend.takeCloneCredential?.(sessionId) ?? null,
    async bundle(sessionId) {
      const w = await deps.workspaces.get(sessionId);
      if (!w) throw new NotFoundError(`Session "${sessionId}" has no working copy`);
      if (!await backend.storageExists(sessionId)) {
        throw new StorageGoneError(`Session "${sessionId}"'s storage is gone`);
      }
      return await backend.bundle(sessionId, {
        baseSha: w.baseSha,
        branch: w.branch,
        message: `Uncommitted changes of lvmh session ${sessionId}`,
      });
    },
    recover,
    recovered: () => recovered,
    async shutdown() {
      clearInterval(timer);
      await recovered;
    },
  };
}
