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
import { type CloneCredential, type SpawnBackend, StorageGoneError } from "./spawn/backend.ts";
import { type ContainerRow, ContainerStates, lastLines, type WorkerEnd } from "./spawn/containers.ts";
import { SpawnJobs } from "./spawn/jobs.ts";
import { createPipeline } from "./spawn/pipeline.ts";
import { reconcileJobs, recoverJobs } from "./spawn/recovery.ts";
import { localWorkerStates, type WorkerStates } from "./spawn/worker_states.ts";
import { createSettler, guarded } from "./spawn/settle.ts";
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
  /** Stop the periodic check and wait for the start-up recovery (close the backend first: that cuts its calls). */
  shutdown(): Promise<void>;
}

/** Everything the spawner needs from the rest of the daemon. */
export interface SpawnDeps {
  config: Pick<Config, "port" | "workerUrl">;
  /** Where workers run. */
  backend: SpawnBackend;
  /** Called with the whole job list after every change (the daemon sends it as `spawn_status`). */
  publishJobs(jobs: SpawnJob[]): void;
  /** The job list, when not an in-memory one over `publishJobs`: with replicas, the shared one. */
  jobs?: SpawnJobs;
  /** List a spawned session offline, with the tools that need approval; never overwrites a hello. */
  registerSession(info: SessionInfo, ask: AskSet | undefined): void | Promise<void>;
  /** Clone URLs and the clone credential (GitLab). */
  repos: { cloneUrl(repo: string): string; credential(): string | null };
  /** The session-scoped token a worker presents instead of the daemon's. */
  agentToken(sessionId: string): Promise<string>;
  /** Each session's working copy record (`app.workspaces`). */
  workspaces: Pick<WorkspaceBook, "record" | "get">;
  /**
   * Where worker states are kept: the daemon's database, or with replicas the rows they share (every replica
   * then acts on every worker, each move a compare-and-set); an in-memory table without it.
   */
  containers?: ContainerStates | WorkerStates;
  /** With shared states: whether this replica leads (it then also watches the workers no job here follows). */
  leads?(): boolean;
  /** A worker ended by itself with a failure (non-zero exit, OOM kill). */
  onCrash?(sessionId: string, end: WorkerEnd): void;
}

/** How often running jobs are checked against the backend (a worker may exit on its own). */
const RECONCILE_MS = 5000;

/** Build the spawner; it starts finding its workers again at once, in the background. */
export function createSpawner(deps: SpawnDeps): Spawner {
  const { backend, config } = deps;
  const jobs = deps.jobs ?? new SpawnJobs(deps.publishJobs);
  const run = createPipeline({
    backend,
    jobs,
    agentUrl: config.workerUrl ?? `ws://127.0.0.1:${config.port}/agent/ws`,
    registerSession: deps.registerSession,
    repos: deps.repos,
    agentToken: deps.agentToken,
    workspaces: deps.workspaces,
  });
  const given = deps.containers ?? new ContainerStates(new DatabaseSync(":memory:"));
  const containers = given instanceof ContainerStates ? localWorkerStates(given) : given;
  /** Sessions being stopped or discarded: their worker's end is not a crash. */
  const stopping = new Set<string>();
  const settler = createSettler({ backend, jobs, containers, stopping, onCrash: deps.onCrash });

  let settled = false;
  const settleStates = async () => {
    if (await settler.settleStates()) settled = true;
  };

  /**
   * A started worker's state moves to `running`; with replicas only from `starting`: a stop another replica
   * made meanwhile wins, and the worker it may have missed (made after its stop) is stopped here.
   */
  const started = async (sessionId: string, repo: string) => {
    try {
      if (await containers.set(sessionId, repo, "running", guarded(containers, ["starting"]))) return;
    } catch (error) {
      return unkept(sessionId, error); // the worker runs: the start stands, its state says `starting`
    }
    await backend.stopSession(sessionId).catch(() => {});
  };
  const unkept = (sessionId: string, error: unknown) =>
    console.warn(`lvmh: worker state of ${sessionId} not kept: ${(error as Error)?.message}`);

  // A shared list first takes back its jobs of before a restart: a worker one follows is not found again.
  const recover = () => jobs.ready().then(() => recoverJobs(backend, jobs)).then(settleStates);

  // Containers outlive the daemon; find them again in the background (Docker may be down: that is fine).
  const recovered = recover();
  let reconciling: Promise<void> | null = null;
  const check = () =>
    reconciling ??= reconcileJobs(backend, jobs, settler.ended)
      .then(() => settled ? undefined : recovered.then(settleStates))
      .then(() => containers.shared && deps.leads?.() ? settler.watchAll() : undefined)
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
      // The state before the job: a database that refuses the write leaves no job behind.
      await containers.set(job.sessionId, job.repo, "starting");
      jobs.add(job);
      try {
        // Kubernetes answers once the Pod is created; how its start ends is followed on the job.
        const containerId = await run(job, body.ask, {
          onStarted(error) {
            if (error) containers.delete(job.sessionId).catch((e) => unkept(job.sessionId, e));
            else void started(job.sessionId, job.repo);
          },
        });
        if (!backend.awaitStart) await started(job.sessionId, job.repo);
        return { sessionId: job.sessionId, containerId, jobId: job.id };
      } catch (error) {
        // The failed spawn removed the session's storage: nothing is left to resume.
        await containers.delete(job.sessionId).catch(() => {});
        // Backends throw domain kinds; anything else (a token or URL helper) is still a failed spawn.
        throw isDomainError(error) ? error : new UpstreamError(String((error as Error)?.message ?? error));
      }
    },
    async resume(sessionId) {
      const row = await containers.fresh(sessionId);
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
      const before = row.state;
      // With replicas the resume is this one's once its move from the state read is made.
      if (!await containers.set(sessionId, row.repo, "starting", guarded(containers, [before]))) {
        throw new ConflictError(`Session "${sessionId}"'s worker was just moved by another request`);
      }
      jobs.add(job);
      try {
        const containerId = await run(job, undefined, { resume: true });
        await started(sessionId, row.repo);
        return { jobId: job.id, containerId };
      } catch (error) {
        // The storage is kept: the session stays as it was, and may be resumed again.
        const back = before === "crashed" ? "stopped" : before;
        await containers.set(sessionId, row.repo, back, guarded(containers, ["starting"])).catch(() => {});
        throw isDomainError(error) ? error : new UpstreamError(String((error as Error)?.message ?? error));
      }
    },
    jobs: () => jobs.list(),
    check,
    async stopSession(sessionId) {
      // With replicas the stop is this one's once its move from the state read is made, before the worker is
      // touched: another replica's stop of the same worker then finds it moved and leaves it alone.
      const row = containers.shared ? await containers.fresh(sessionId) : undefined;
      if (row) {
        const runs = row.state === "starting" || row.state === "running";
        if (!runs || !await containers.set(sessionId, row.repo, "stopped", { from: [row.state] })) {
          throw new NotFoundError(
            `Session "${sessionId}" has no running worker (stopped by another request)`,
          );
        }
      }
      stopping.add(sessionId);
      try {
        let logs: string;
        try {
          logs = await backend.stopSession(sessionId);
        } catch (error) {
          // The backend did not answer: the worker may still run, and its state says so again.
          if (row && !(error instanceof NotFoundError)) {
            await containers.set(sessionId, row.repo, row.state, { from: ["stopped"] }).catch(() => {});
          }
          throw error;
        }
        for (const job of jobs.forSession(sessionId)) if (job.state !== "failed") jobs.update(job, "stopped");
        const repo = containers.get(sessionId)?.repo ?? jobs.forSession(sessionId)[0]?.repo ?? "";
        await containers.set(sessionId, repo, "stopped", { logs, ...guarded(containers, ["stopped"]) });
      } finally {
        stopping.delete(sessionId);
      }
    },
    async discard(sessionId) {
      const row = await containers.fresh(sessionId);
      if (!row) return;
      if (row.state === "starting" || row.state === "running") {
        throw new ConflictError(`Session "${sessionId}"'s worker runs: stop it first`);
      }
      // With replicas the discard is this one's once its row is gone (a compare-and-set on the state read);
      // a backend that did not answer puts it back, the storage then still there.
      const kept = containers.shared ? await containers.logs(sessionId) : null;
      if (containers.shared && !await containers.delete(sessionId, [row.state])) {
        throw new ConflictError(`Session "${sessionId}"'s worker was just moved by another request`);
      }
      stopping.add(sessionId);
      try {
        await backend.stopSession(sessionId).catch((error) => {
          if (!(error instanceof NotFoundError)) throw error;
        });
        await backend.removeSessionStorage(sessionId);
        if (!containers.shared) await containers.delete(sessionId);
      } catch (error) {
        if (containers.shared) {
          const end = row.exitCode === null
            ? {}
            : { end: { exitCode: row.exitCode, reason: row.reason ?? "" } };
          await containers.set(sessionId, row.repo, row.state, { from: [null], logs: kept, ...end })
            .catch(() => {});
        }
        throw error;
      } finally {
        stopping.delete(sessionId);
      }
    },
    async logs(sessionId, tail) {
      let id = jobs.forSession(sessionId).find((j) => j.state === "running" && j.containerId)?.containerId;
      // With replicas the worker may be another replica's: found by its label.
      if (!id && containers.shared && containers.get(sessionId)?.state === "running") {
        id = (await backend.listWorkers()).find((w) => w.sessionId === sessionId && w.running)?.id;
      }
      if (id) {
        try {
          return await backend.workerLogs(id, tail);
        } catch (error) {
          if (!(error instanceof NotFoundError)) throw error;
        }
      }
      const kept = await containers.logs(sessionId);
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
      containers.close();
      await recovered;
      await jobs.close();
    },
  };
}
