/**
 * Spawn jobs: start a pi session in a container on a GitLab repository, following the protocol's steps:
 * worker image (built when missing), clone or pull into the repo's volume (serialised per volume), session
 * volume, container create and start, the session pre-registered offline until its bridge says hello.
 * Every job change is broadcast as a `spawn_status` frame.
 */
import { createHash } from "node:crypto";
import type { AppCore } from "./app.ts";
import type { Gitlab } from "./gitlab.ts";
import { isDomainError, NotFoundError, UnavailableError, UpstreamError } from "./errors.ts";
import { agentToken } from "./auth.ts";
import type { SpawnBody, SpawnJob } from "./protocol.ts";
import { SpawnJobs } from "./spawn_jobs.ts";
import { createEngine, type Engine } from "../docker/engine.ts";
import { DockerError, DockerNotFoundError, DockerUnreachableError } from "../docker/errors.ts";
import { cloneIntoVolume } from "../docker/clone.ts";
import { createTar } from "../docker/tar.ts";
import { buildWorkerImage, MANAGED, workerCreateBody, workerImageStale } from "../docker/worker.ts";

/** Starts agent sessions in containers. */
export interface Spawner {
  /**
   * Run a spawn job up to a started container.
   * @throws {UnavailableError} when Docker is unreachable (before any job exists); {UpstreamError} when the
   * image build, clone or container start failed (the job is then `failed` with the engine's message).
   */
  spawn(body: SpawnBody): Promise<{ sessionId: string; containerId: string; jobId: string }>;
  /** Every known job, newest first. */
  jobs(): SpawnJob[];
  /**
   * Stop and remove a session's container and its session volume.
   * @throws {NotFoundError} when no lvmh container belongs to the session; {UnavailableError} without Docker.
   */
  stopSession(sessionId: string): Promise<void>;
  /** Find lvmh's containers again by label (daemon restart). Never throws. */
  recover(): Promise<void>;
  shutdown(): Promise<void>;
}

const MAX_VOLUME_NAME = 200;
/** Dropped into the session volume once the workspace is cloned or pulled; the bridge waits for it. */
const READY_MARKER = ".lvmh-workspace-ready";
/** Clone helpers older than this are leftovers of a crash. */
const STALE_HELPER_S = 15 * 60;
/** How often running jobs are checked against the engine (a worker may exit on its own). */
const RECONCILE_MS = 5000;

/** `lvmh-repo-<slug>`: `/` → `--`, plus `-` and 6 hex of sha256(path), so distinct paths never share one. */
export function repoVolumeName(repo: string): string {
  const hash = createHash("sha256").update(repo).digest("hex").slice(0, 6);
  const readable = repo.replaceAll("/", "--").slice(0, MAX_VOLUME_NAME - 20);
  return `lvmh-repo-${readable}-${hash}`;
}

/**
 * Build the spawner.
 * @param options.engine replaces the client on `config.dockerSock` (tests).
 * @param options.contextRoot where the worker build context is read (the project root by default).
 */
export function createSpawner(
  core: Pick<AppCore, "config" | "store" | "hub" | "onSessionsChanged">,
  gitlab: Gitlab,
  options: { engine?: Engine; contextRoot?: string } = {},
): Spawner {
  const { config, store, hub } = core;
  const engine = options.engine ?? createEngine({ socketPath: config.dockerSock });
  const jobs = new SpawnJobs((list) => hub.broadcast({ type: "spawn_status", jobs: list }));
  const update = jobs.update.bind(jobs);
  const volumeLocks = new Map<string, Promise<unknown>>();
  let imageReady: Promise<void> | null = null;
  /** Jobs waiting on the image build in progress. */
  const building = new Set<SpawnJob>();
  const agentUrl = config.workerUrl ?? `ws://127.0.0.1:${config.port}/agent/ws`;

  /** Run `fn` after every earlier holder of `key` settled (a promise chain per repo volume). */
  function withLock<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const run = (volumeLocks.get(key) ?? Promise.resolve()).catch(() => {}).then(fn);
    volumeLocks.set(key, run);
    run.finally(() => volumeLocks.get(key) === run && volumeLocks.delete(key)).catch(() => {});
    return run;
  }

  /**
   * Build the worker image once for all concurrent spawns, when missing or built from older sources;
   * a failure lets the next spawn retry.
   */
  function ensureImage(job: SpawnJob): Promise<void> {
    // Jobs that arrive while a build runs wait for it, and say so.
    if (imageReady && building.size > 0) {
      building.add(job);
      update(job, "building");
    }
    imageReady ??= (async () => {
      if (!await workerImageStale(engine, config.workerImage, options.contextRoot)) return;
      building.add(job);
      update(job, "building");
      try {
        await buildWorkerImage(engine, {
          image: config.workerImage,
          baseImage: config.workerBaseImage,
          network: config.workerNetwork,
          contextRoot: options.contextRoot,
        });
      } finally {
        building.clear();
      }
    })().catch((error) => {
      imageReady = null;
      throw error;
    });
    return imageReady;
  }

  async function run(job: SpawnJob): Promise<string> {
    const repoVolume = repoVolumeName(job.repo);
    const sessionVolume = `lvmh-sess-${job.sessionId}`;
    const labels = { ...MANAGED, "lvmh.repo": job.repo };
    let containerId: string | null = null;
    try {
      await ensureImage(job);
      update(job, "starting");
      await engine.volumeCreate(repoVolume, { ...labels, "lvmh.kind": "repo" });
      await engine.volumeCreate(sessionVolume, {
        ...labels,
        "lvmh.kind": "session",
        "lvmh.session": job.sessionId,
      });
      // The worker starts before the clone or pull: loading pi (most of a spawn's time) overlaps git, and
      // the bridge opens the session only once the ready marker below is in its session volume.
      const body = workerCreateBody({
        image: config.workerImage,
        sessionId: job.sessionId,
        repo: job.repo,
        branch: job.branch,
        repoVolume,
        sessionVolume,
        network: config.workerNetwork,
        agentUrl,
        token: await agentToken(config.token, job.sessionId),
        providerKey: config.providerKey,
        modelsJson: config.modelsJson,
        readyFile: `/pi-sessions/${READY_MARKER}`,
        limits: config.workerLimits,
      });
      for (let attempt = 1;; attempt++) {
        containerId = await engine.containerCreate(sessionVolume, body);
        job.containerId = containerId;
        try {
          await engine.containerStart(containerId);
          break;
        } catch (error) {
          // runc under load sometimes fails a start with a 5xx ("can't get final child's PID"); that is the
          // engine's hiccup, not a bad request, so try once more with a fresh container.
          if (attempt > 1 || !(error instanceof DockerError) || error.status < 500) throw error;
          await engine.containerRemove(containerId, true).catch(() => {});
          containerId = null;
        }
      }
      await withLock(repoVolume, async () => {
        update(job, "cloning");
        await cloneIntoVolume(engine, {
          image: config.workerImage,
          volume: repoVolume,
          url: gitlab.cloneUrl(job.repo),
          branch: job.branch,
          token: gitlab.credential(),
          network: config.workerNetwork,
          labels,
        });
      });
      await engine.containerPutArchive(
        containerId!,
        "/pi-sessions",
        createTar([{ path: READY_MARKER, type: "file", data: new TextEncoder().encode(`${Date.now()}\n`) }]),
      );
      // Listed (offline) right away; the bridge's hello replaces this snapshot and sets it online.
      store.upsertSession({
        id: job.sessionId,
        name: null,
        cwd: "/workspace",
        model: null,
        provider: null,
        agent: true,
        repo: job.repo,
        startedAt: job.createdAt,
      });
      core.onSessionsChanged();
      update(job, "running");
      return containerId;
    } catch (error) {
      // The image went away behind our back (removed by hand): build it again on the next spawn.
      if (error instanceof DockerNotFoundError && !containerId) imageReady = null;
      // No half-made container: remove what this job created before reporting.
      if (containerId) await engine.containerRemove(containerId, true).catch(() => {});
      await engine.volumeRemove(sessionVolume, true).catch(() => {});
      update(job, "failed", { containerId: null, error: messageOf(error) });
      throw error;
    }
  }

  async function stopSession(sessionId: string): Promise<void> {
    let found;
    try {
      found = await engine.containerList({ ...MANAGED, "lvmh.kind": "worker", "lvmh.session": sessionId });
    } catch (error) {
      throw mapError(error);
    }
    if (found.length === 0) throw new NotFoundError(`Session "${sessionId}" has no container`);
    for (const c of found) {
      try {
        await engine.containerStop(c.Id, 10);
        await engine.containerRemove(c.Id, true);
      } catch (error) {
        if (!(error instanceof DockerNotFoundError)) throw mapError(error);
      }
    }
    await engine.volumeRemove(`lvmh-sess-${sessionId}`, true).catch(() => {});
    for (const job of jobs.forSession(sessionId)) if (job.state !== "failed") update(job, "stopped");
  }

  async function recover(): Promise<void> {
    try {
      for (const c of await engine.containerList(MANAGED)) {
        const kind = c.Labels["lvmh.kind"];
        if (kind === "clone") {
          // A helper left by a crash mid-clone. Only old ones: a recent one may belong to another daemon
          // on the same engine that is cloning right now (helpers time out after 10 minutes).
          if (Date.now() / 1000 - c.Created > STALE_HELPER_S) {
            await engine.containerRemove(c.Id, true).catch(() => {});
          }
          continue;
        }
        const sessionId = c.Labels["lvmh.session"];
        if (kind !== "worker" || !sessionId || jobs.forSession(sessionId).length > 0) continue;
        const at = c.Created * 1000;
        jobs.add({
          id: crypto.randomUUID(),
          repo: c.Labels["lvmh.repo"] ?? "",
          branch: null,
          state: c.State === "running" ? "running" : "stopped",
          sessionId,
          containerId: c.Id,
          error: null,
          createdAt: at,
          updatedAt: at,
        });
      }
    } catch (error) {
      console.warn(`lvmh: could not list containers on start: ${messageOf(error)}`);
    }
  }

  /** A worker that exited on its own (or was removed by hand) is no longer "running". */
  async function reconcile(): Promise<void> {
    const running = jobs.inState("running");
    if (running.length === 0) return;
    const live = new Set(
      (await engine.containerList({ ...MANAGED, "lvmh.kind": "worker" }))
        .filter((c) => c.State === "running" || c.State === "restarting")
        .map((c) => c.Id),
    );
    for (const job of running) {
      if (job.containerId && !live.has(job.containerId)) update(job, "stopped");
    }
  }

  // Containers outlive the daemon; find them again in the background (Docker may be down: that is fine).
  const recovered = recover();
  let reconciling = false;
  const timer = setInterval(() => {
    if (reconciling) return;
    reconciling = true;
    reconcile().catch(() => {}).finally(() => reconciling = false);
  }, RECONCILE_MS);
  Deno.unrefTimer(timer);

  return {
    async spawn(body) {
      try {
        await engine.ping();
      } catch (error) {
        throw mapError(error);
      }
      const now = Date.now();
      const job: SpawnJob = {
        id: crypto.randomUUID(),
        repo: body.repo,
        branch: body.branch ?? null,
        state: "queued",
        sessionId: crypto.randomUUID(),
        containerId: null,
        error: null,
        createdAt: now,
        updatedAt: now,
      };
      jobs.add(job);
      try {
        const containerId = await run(job);
        return { sessionId: job.sessionId, containerId, jobId: job.id };
      } catch (error) {
        throw mapError(error);
      }
    },
    jobs: () => jobs.list(),
    stopSession,
    recover,
    async shutdown() {
      clearInterval(timer);
      await recovered;
    },
  };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Engine unreachable → 503; any other engine or git failure → 502 with its message. */
function mapError(error: unknown): Error {
  if (error instanceof DockerUnreachableError) {
    return new UnavailableError(`Docker is unreachable: ${error.message}`);
  }
  if (isDomainError(error)) return error;
  return new UpstreamError(messageOf(error));
}
