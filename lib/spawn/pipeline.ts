/**
 * One spawn job, step by step: image (single-flight) → the session's storage → at once, the worker created
 * and started (so loading pi overlaps git), and the repository's cache cloned or fetched, then the session's
 * working copy made from it on the session's own branch (both serialised per repository) and its base
 * recorded → session listed offline → ready signal → `running`. A failure removes what the job made and
 * leaves the job `failed` with the message.
 */
import type { AskSet, SessionInfo, SpawnJob } from "../protocol.ts";
import type { SpawnBackend } from "./backend.ts";
import { ImageMissingError } from "./backend.ts";
import { createImageGate } from "./image.ts";
import type { SpawnJobs } from "./jobs.ts";
import { createKeyedLock } from "./lock.ts";
import { startWorker } from "./start.ts";
import { type WorkspaceBook, workspaceBranch } from "../workspaces.ts";

/** What the pipeline needs besides the backend. */
export interface PipelineDeps {
  backend: SpawnBackend;
  jobs: SpawnJobs;
  /** The agent socket URL workers dial. */
  agentUrl: string;
  /** List a session (offline) before its worker can say hello (with replicas, resolved once shared). */
  registerSession(info: SessionInfo, ask: AskSet | undefined): void | Promise<void>;
  repos: { cloneUrl(repo: string): string; credential(): string | null };
  /** The session-scoped token a worker presents. */
  agentToken(sessionId: string): Promise<string>;
  /** Where each session's working copy started: recorded once, read when a session is spawned again. */
  workspaces: Pick<WorkspaceBook, "record" | "get">;
}

/**
 * Runs one job to `running` and returns its worker's id, or throws what failed it. With `resume`, the job
 * starts a new worker on a stopped session's storage: no git (the working copy is the session's, with the
 * agent's work in it), no new listing (the session keeps its row and ask set), and a failure leaves the
 * storage in place.
 */
export type RunJob = (
  job: SpawnJob,
  ask: AskSet | undefined,
  mode?: {
    resume?: boolean;
    /**
     * Answer early: a backend whose worker clones for itself (Kubernetes) returns once the worker is
     * created, follows it to `running` in the background and says here how that ended (a failure has then
     * removed what the job made, as a failure before the return does). Other backends run to `running`
     * before they return and never call it.
     */
    onStarted?: (error: Error | null) => void;
  },
) => Promise<string>;

/** Build the pipeline; its image gate and workspace lock are shared by every job it runs. */
export function createPipeline(deps: PipelineDeps): RunJob {
  const { backend, jobs } = deps;
  const image = createImageGate(backend);
  const withLock = createKeyedLock();

  /** List a new session, offline, as what it is before its worker's hello (pi's own snapshot) fills it in. */
  const listOffline = (job: SpawnJob, ask: AskSet | undefined) =>
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

  /** Fetch the cache, make the session's copy from it and record its base (the first time). */
  const prepare = (job: SpawnJob) => {
    const url = deps.repos.cloneUrl(job.repo);
    return withLock(job.repo, async () => {
      jobs.update(job, "cloning");
      await backend.refreshCache({ repo: job.repo, url, credential: deps.repos.credential() });
      // A session spawned again under its id (a hook after a restart) starts from its recorded base.
      const known = await deps.workspaces.get(job.sessionId);
      const copy = await backend.makeWorkingCopy({
        sessionId: job.sessionId,
        repo: job.repo,
        url,
        baseBranch: known?.baseBranch ?? job.branch,
        baseSha: known?.baseSha ?? null,
        branch: known?.branch ?? workspaceBranch(job.sessionId),
      });
      if (!known && !copy.kept) {
        await deps.workspaces.record(job.sessionId, {
          repo: job.repo,
          baseBranch: copy.baseBranch,
          baseSha: copy.baseSha,
          branch: workspaceBranch(job.sessionId),
        });
      }
    });
  };

  /** Start a worker on storage that is there already (a stopped or crashed session). */
  const resume = async (job: SpawnJob) => {
    let workerId: string | null = null;
    try {
      await image.ensure(() => jobs.update(job, "building"));
      jobs.update(job, "starting");
      const token = await deps.agentToken(job.sessionId);
      workerId = job.containerId = await startWorker(backend, {
        sessionId: job.sessionId,
        repo: job.repo,
        branch: job.branch,
        agentUrl: deps.agentUrl,
        token,
        resume: true,
      });
      await backend.signalReady(workerId);
      jobs.update(job, "running");
      return workerId;
    } catch (error) {
      if (error instanceof ImageMissingError) image.reset();
      if (workerId) await backend.removeWorker(workerId);
      jobs.update(job, "failed", {
        containerId: null,
        error: error instanceof Error ? error.message : String(error),
      });
      throw error;
    }
  };

  /**
   * A backend whose worker clones for itself (Kubernetes): storage, then the worker with what to clone
   * (a session spawned again keeps its recorded base), listed offline, then followed until it runs. The
   * backend records the clone's base (`onCloned`), also for a worker a restarted daemon finds mid-clone.
   */
  const runSelfCloning = async (
    job: SpawnJob,
    ask: AskSet | undefined,
    resuming: boolean,
    onStarted?: (error: Error | null) => void,
  ) => {
    let workerId: string | null = null;
    const failed = async (error: unknown) => {
      if (workerId) await backend.removeWorker(workerId);
      if (!resuming) await backend.removeSessionStorage(job.sessionId);
      jobs.update(job, "failed", {
        containerId: null,
        error: error instanceof Error ? error.message : String(error),
      });
    };
    try {
      if (!resuming) await backend.createStorage({ sessionId: job.sessionId, repo: job.repo });
      const known = await deps.workspaces.get(job.sessionId);
      workerId = job.containerId = await backend.createWorker({
        sessionId: job.sessionId,
        repo: job.repo,
        branch: job.branch,
        agentUrl: deps.agentUrl,
        token: await deps.agentToken(job.sessionId),
        resume: resuming,
        clone: {
          url: deps.repos.cloneUrl(job.repo),
          baseBranch: known?.baseBranch ?? job.branch,
          baseSha: known?.baseSha ?? null,
          branch: known?.branch ?? workspaceBranch(job.sessionId),
        },
      });
      if (!resuming) await listOffline(job, ask);
      const started = backend.awaitStart!(
        workerId,
        (state, message) => jobs.update(job, state, { error: message }),
      ).then(() => {
        jobs.update(job, "running", { error: null });
      });
      if (onStarted) {
        // The Pod exists: the rest (scheduling, image pull, clone, start) is followed on the job.
        started.then(
          () => onStarted(null),
          async (error) => {
            await failed(error).catch(() => {});
            onStarted(error instanceof Error ? error : new Error(String(error)));
          },
        );
        return workerId;
      }
      await started;
      return workerId;
    } catch (error) {
      await failed(error);
      throw error;
    }
  };

  return async function run(job, ask, mode = {}) {
    if (backend.awaitStart) return await runSelfCloning(job, ask, mode.resume === true, mode.onStarted);
    if (mode.resume) return await resume(job);
    let workerId: string | null = null;
    try {
      await image.ensure(() => jobs.update(job, "building"));
      jobs.update(job, "starting");
      // The volumes first, with their labels: the worker and the copy helper both mount the working copy.
      await backend.createStorage({ sessionId: job.sessionId, repo: job.repo });
      const token = await deps.agentToken(job.sessionId);
      // The worker starts (and loads pi) while git runs: two helper containers, one after the other, cost
      // about as much as starting the worker, so a spawn waits for the longer of the two, not their sum.
      const started = startWorker(backend, {
        sessionId: job.sessionId,
        repo: job.repo,
        branch: job.branch,
        agentUrl: deps.agentUrl,
        token,
      }).then((id) => {
        workerId = job.containerId = id;
        return id;
      });
      const [worker, git] = await Promise.allSettled([started, prepare(job)]);
      if (worker.status === "rejected") throw worker.reason;
      if (git.status === "rejected") throw git.reason;
      // Listed before the worker may open its session: the bridge waits for the ready signal, so its hello
      // (which sets the session online with pi's own snapshot) always comes after this offline entry.
      await listOffline(job, ask);
      await backend.signalReady(worker.value);
      jobs.update(job, "running");
      return worker.value;
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
