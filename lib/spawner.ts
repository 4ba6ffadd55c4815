/**
 * The spawner: starts pi sessions in workers on GitLab repositories, keeps the job list, finds its workers
 * again after a restart and stops them. The steps live in `lib/spawn/` (image gate, repository lock, start,
 * pipeline, recovery); where workers run is a `SpawnBackend` (the Docker engine today). Its dependencies are
 * the narrow `SpawnDeps`, not the daemon's core, so nothing here imports `lib/app.ts`.
 */
import type { Config } from "./config.ts";
import { ConflictError, isDomainError, UpstreamError } from "./errors.ts";
import type { AskSet, SessionInfo, SpawnBody, SpawnJob } from "./protocol.ts";
import type { SpawnBackend } from "./spawn/backend.ts";
import { SpawnJobs } from "./spawn/jobs.ts";
import { createPipeline } from "./spawn/pipeline.ts";
import { reconcileJobs, recoverJobs } from "./spawn/recovery.ts";
import type { Workspaces } from "./workspaces.ts";

/** Starts agent sessions in containers. */
export interface Spawner {
  /**
   * Run a spawn job up to a started container.
   * @throws {UnavailableError} when Docker is unreachable (before any job exists); {UpstreamError} when the
   * image build, clone or container start failed (the job is then `failed` with the engine's message);
   * {ConflictError} when `options.sessionId` already has a live job.
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
   * Stop and remove a session's container, its session volume and its working copy.
   * @throws {NotFoundError} when no lvmh container belongs to the session; {UnavailableError} without Docker.
   */
  stopSession(sessionId: string): Promise<void>;
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
  workspaces: Pick<Workspaces, "record" | "get">;
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
  const recover = () => recoverJobs(backend, jobs);

  // Containers outlive the daemon; find them again in the background (Docker may be down: that is fine).
  const recovered = recover();
  let reconciling = false;
  const timer = setInterval(() => {
    if (reconciling) return;
    reconciling = true;
    reconcileJobs(backend, jobs).catch(() => {}).finally(() => reconciling = false);
  }, RECONCILE_MS);
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
      try {
        const containerId = await run(job, body.ask);
        return { sessionId: job.sessionId, containerId, jobId: job.id };
      } catch (error) {
        // Backends throw domain kinds; anything else (a token or URL helper) is still a failed spawn.
        throw isDomainError(error) ? error : new UpstreamError(String((error as Error)?.message ?? error));
      }
    },
    jobs: () => jobs.list(),
    async stopSession(sessionId) {
      await backend.stopSession(sessionId);
      for (const job of jobs.forSession(sessionId)) if (job.state !== "failed") jobs.update(job, "stopped");
    },
    recover,
    recovered: () => recovered,
    async shutdown() {
      clearInterval(timer);
      await recovered;
    },
  };
}
