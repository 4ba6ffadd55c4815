/**
 * One spawn job, step by step: image (single-flight) → worker created and started (so loading pi overlaps
 * git) → workspace cloned or pulled (serialised per repository) → session listed offline → ready signal →
 * `running`. A failure removes what the job made and leaves the job `failed` with the message.
 */
import type { AskSet, SessionInfo, SpawnJob } from "../protocol.ts";
import type { SpawnBackend } from "./backend.ts";
import { ImageMissingError } from "./backend.ts";
import { createImageGate } from "./image.ts";
import type { SpawnJobs } from "./jobs.ts";
import { createKeyedLock } from "./lock.ts";
import { startWorker } from "./start.ts";

/** What the pipeline needs besides the backend. */
export interface PipelineDeps {
  backend: SpawnBackend;
  jobs: SpawnJobs;
  /** The agent socket URL workers dial. */
  agentUrl: string;
  /** List a session (offline) before its worker can say hello. */
  registerSession(info: SessionInfo, ask: AskSet | undefined): void;
  repos: { cloneUrl(repo: string): string; credential(): string | null };
  /** The session-scoped token a worker presents. */
  agentToken(sessionId: string): Promise<string>;
}

/** Runs one job to `running` and returns its worker's id, or throws what failed it. */
export type RunJob = (job: SpawnJob, ask: AskSet | undefined) => Promise<string>;

/** Build the pipeline; its image gate and workspace lock are shared by every job it runs. */
export function createPipeline(deps: PipelineDeps): RunJob {
  const { backend, jobs } = deps;
  const image = createImageGate(backend);
  const withLock = createKeyedLock();

  return async function run(job, ask) {
    let workerId: string | null = null;
    try {
      await image.ensure(() => jobs.update(job, "building"));
      jobs.update(job, "starting");
      workerId = await startWorker(backend, {
        sessionId: job.sessionId,
        repo: job.repo,
        branch: job.branch,
        agentUrl: deps.agentUrl,
        token: await deps.agentToken(job.sessionId),
      });
      job.containerId = workerId;
      await withLock(job.repo, async () => {
        jobs.update(job, "cloning");
        await backend.prepareWorkspace({
          repo: job.repo,
          branch: job.branch,
          url: deps.repos.cloneUrl(job.repo),
          credential: deps.repos.credential(),
        });
      });
      // Listed before the worker may open its session: the bridge waits for the ready signal, so its hello
      // (which sets the session online with pi's own snapshot) always comes after this offline entry.
      deps.registerSession({
        id: job.sessionId,
        name: null,
        cwd: "/workspace",
        model: null,
        provider: null,
        agent: true,
        repo: job.repo,
        startedAt: job.createdAt,
      }, ask);
      await backend.signalReady(workerId);
      jobs.update(job, "running");
      return workerId;
    } catch (error) {
      // The image went away behind our back (removed by hand): check it again on the next spawn.
      if (error instanceof ImageMissingError) image.reset();
      if (workerId) await backend.removeWorker(workerId);
      await backend.removeSessionStorage(job.sessionId);
      jobs.update(job, "failed", {
        containerId: null,
        error: error instanceof Error ? error.message : String(error),
      });
      throw error;
    }
  };
}
