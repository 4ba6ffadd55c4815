/**
 * The Docker engine as a spawn backend: a worker is a container labelled `lvmh.*`, a repository's cache its
 * `lvmh-repo-<slug>` volume (filled by a fetch helper, `docker/clone.ts`), a session's storage its
 * `lvmh-sess-<id>` volume and its working copy its `lvmh-work-<id>` volume (filled from the cache by a copy
 * helper with no network), and "ready" a marker file the bridge waits for. Engine errors become the kinds of
 * `lib/errors.ts` here and nowhere else.
 */
import { createHash } from "node:crypto";
import type { Config } from "../config.ts";
import { isDomainError, NotFoundError, UnavailableError, UpstreamError } from "../errors.ts";
import { createEngine, type Engine } from "../../docker/engine.ts";
import { DockerError, DockerNotFoundError, DockerUnreachableError } from "../../docker/errors.ts";
import { copyWorkspace, fetchIntoCache } from "../../docker/clone.ts";
import { createTar } from "../../docker/tar.ts";
import { sessionBundle } from "../../docker/session_bundle.ts";
import { dockerHelperRunner } from "../../docker/helper.ts";
import { buildWorkerImage, MANAGED, workerCreateBody, workerImageStale } from "../../docker/worker.ts";
import {
  ImageMissingError,
  type ManagedWorker,
  MAX_LOG_LINES,
  RetryableError,
  type SpawnBackend,
} from "./backend.ts";
import { lastLines } from "./containers.ts";
import { workVolumeName } from "../workspaces.ts";

const MAX_VOLUME_NAME = 200;
/** Dropped into the session volume once the working copy is made; the bridge waits for it. */
const READY_MARKER = ".lvmh-workspace-ready";
/** Fetch and copy helpers older than this are leftovers of a crash. */
const STALE_HELPER_S = 15 * 60;

/** The configuration the Docker backend reads. */
export type DockerBackendConfig = Pick<
  Config,
  | "dockerSock"
  | "workerImage"
  | "workerBaseImage"
  | "workerNetwork"
  | "workerLimits"
  | "modelsJson"
  | "providerKey"
>;

/** `lvmh-repo-<slug>`: `/` → `--`, plus `-` and 6 hex of sha256(path), so distinct paths never share one. */
export function repoVolumeName(repo: string): string {
  const hash = createHash("sha256").update(repo).digest("hex").slice(0, 6);
  const readable = repo.replaceAll("/", "--").slice(0, MAX_VOLUME_NAME - 20);
  return `lvmh-repo-${readable}-${hash}`;
}

/** The volume mounted at `/pi-sessions` in one session's worker. */
function sessionVolumeName(sessionId: string): string {
  return `lvmh-sess-${sessionId}`;
}

/**
 * Build the Docker backend.
 * @param options.engine replaces the client on `config.dockerSock` (unit tests pass a fake transport).
 * @param options.contextRoot where the worker build context is read (the project root by default).
 */
export function createDockerBackend(
  config: DockerBackendConfig,
  options: { engine?: Engine; contextRoot?: string } = {},
): SpawnBackend {
  const engine = options.engine ?? createEngine({ socketPath: config.dockerSock });
  const helpers = dockerHelperRunner(engine, { image: config.workerImage, network: config.workerNetwork });
  const network = config.workerNetwork;
  const labelsOf = (repo: string) => ({ ...MANAGED, "lvmh.repo": repo });
  /** The session volume and the working copy; a copy helper still on it is removed first. Never throws. */
  const removeStorage = async (sessionId: string) => {
    const copying = await engine.containerList({ ...MANAGED, "lvmh.kind": "copy", "lvmh.session": sessionId })
      .catch(() => []);
    for (const c of copying) await engine.containerRemove(c.Id, true).catch(() => {});
    await engine.volumeRemove(sessionVolumeName(sessionId), true).catch(() => {});
    await engine.volumeRemove(workVolumeName(sessionId), true).catch(() => {});
  };

  /** A container's last lines; the bridge writes to stderr, pi's tools may print to stdout. */
  const readLogs = async (id: string, tail: number) => {
    try {
      const { stdout, stderr } = await engine.containerLogs(id, tail);
      return lastLines(stdout + (stdout && !stdout.endsWith("\n") ? "\n" : "") + stderr, tail);
    } catch (error) {
      if (error instanceof DockerNotFoundError) throw new NotFoundError("The worker is gone");
      throw toDomain(error);
    }
  };

  return {
    ping: () => domain(engine.ping()),

    imageCurrent: () =>
      domain(workerImageStale(engine, config.workerImage, options.contextRoot).then((stale) => !stale)),

    buildImage: () =>
      domain(buildWorkerImage(engine, {
        image: config.workerImage,
        baseImage: config.workerBaseImage,
        network,
        contextRoot: options.contextRoot,
      })),

    async createStorage({ sessionId, repo }) {
      const labels = { ...labelsOf(repo), "lvmh.session": sessionId };
      await domain(engine.volumeCreate(sessionVolumeName(sessionId), { ...labels, "lvmh.kind": "session" }));
      await domain(engine.volumeCreate(workVolumeName(sessionId), { ...labels, "lvmh.kind": "work" }));
    },

    async createWorker(w) {
      const sessionVolume = sessionVolumeName(w.sessionId);
      const workVolume = workVolumeName(w.sessionId);
      const body = workerCreateBody({
        image: config.workerImage,
        sessionId: w.sessionId,
        repo: w.repo,
        branch: w.branch,
        workVolume,
        sessionVolume,
        network,
        agentUrl: w.agentUrl,
        token: w.token,
        providerKey: config.providerKey,
        modelsJson: config.modelsJson,
        readyFile: `/pi-sessions/${READY_MARKER}`,
        resume: w.resume,
        limits: config.workerLimits,
      });
      try {
        return await engine.containerCreate(sessionVolume, body);
      } catch (error) {
        // The only thing a create can miss once the volumes exist is the image.
        if (error instanceof DockerNotFoundError) throw new ImageMissingError(error.message);
        throw toDomain(error);
      }
    },

    async startWorker(id) {
      try {
        await engine.containerStart(id);
      } catch (error) {
        // runc under load sometimes fails a start with a 5xx ("can't get final child's PID"): the engine's
        // hiccup, not a bad request.
        if (error instanceof DockerError && error.status >= 500) throw new RetryableError(error.message);
        throw toDomain(error);
      }
    },

    async refreshCache(c) {
      const volume = repoVolumeName(c.repo);
      await domain(engine.volumeCreate(volume, { ...labelsOf(c.repo), "lvmh.kind": "repo" }));
      await domain(fetchIntoCache(engine, {
        image: config.workerImage,
        volume,
        url: c.url,
        token: c.credential,
        network,
        labels: labelsOf(c.repo),
      }));
    },

    makeWorkingCopy: (w) =>
      domain(copyWorkspace(engine, {
        image: config.workerImage,
        cacheVolume: repoVolumeName(w.repo),
        workVolume: workVolumeName(w.sessionId),
        url: w.url,
        baseBranch: w.baseBranch,
        baseSha: w.baseSha,
        branch: w.branch,
        labels: { ...labelsOf(w.repo), "lvmh.session": w.sessionId },
      })),

    signalReady: (id) =>
      domain(engine.containerPutArchive(
        id,
        "/pi-sessions",
        createTar([{ path: READY_MARKER, type: "file", data: new TextEncoder().encode(`${Date.now()}\n`) }]),
      )),

    async removeWorker(id) {
      await engine.containerRemove(id, true).catch(() => {});
    },

    removeSessionStorage: (sessionId) => removeStorage(sessionId),

    async storageExists(sessionId) {
      return await domain(engine.volumeExists(sessionVolumeName(sessionId))) &&
        await domain(engine.volumeExists(workVolumeName(sessionId)));
    },

    async workingCopyExists(sessionId) {
      return await domain(engine.volumeExists(workVolumeName(sessionId)));
    },

    async stopSession(sessionId) {
      const found = await domain(
        engine.containerList({ ...MANAGED, "lvmh.kind": "worker", "lvmh.session": sessionId }),
      );
      if (found.length === 0) throw new NotFoundError(`Session "${sessionId}" has no container`);
      let logs = "";
      for (const c of found) {
        try {
          await engine.containerStop(c.Id, 10);
          logs = await readLogs(c.Id, MAX_LOG_LINES).catch(() => logs);
          await engine.containerRemove(c.Id, true);
        } catch (error) {
          if (!(error instanceof DockerNotFoundError)) throw toDomain(error);
        }
      }
      return logs;
    },

    async workerStatus(id) {
      try {
        const info = await engine.containerInspect(id);
        return {
          running: info.State.Running,
          exitCode: info.State.ExitCode,
          oom: info.State.OOMKilled === true,
        };
      } catch (error) {
        if (error instanceof DockerNotFoundError) return null;
        throw toDomain(error);
      }
    },

    workerLogs: (id, tail) => readLogs(id, tail),

    helpers,

    async bundle(sessionId, o) {
      const made = await domain(sessionBundle(helpers, {
        sessionId,
        baseSha: o.baseSha,
        branch: o.branch,
        message: o.message,
      }));
      return made.bundle;
    },

    async listWorkers() {
      const found = await domain(engine.containerList({ ...MANAGED, "lvmh.kind": "worker" }));
      const workers: ManagedWorker[] = [];
      for (const c of found) {
        const sessionId = c.Labels["lvmh.session"];
        if (!sessionId) continue;
        workers.push({
          id: c.Id,
          sessionId,
          repo: c.Labels["lvmh.repo"] ?? "",
          running: c.State === "running" || c.State === "restarting",
          createdAt: c.Created * 1000,
        });
      }
      return workers;
    },

    async sweep() {
      const helpers = [
        ...await engine.containerList({ ...MANAGED, "lvmh.kind": "clone" }).catch(() => []),
        ...await engine.containerList({ ...MANAGED, "lvmh.kind": "copy" }).catch(() => []),
        ...await engine.containerList({ ...MANAGED, "lvmh.kind": "export" }).catch(() => []),
        ...await engine.containerList({ ...MANAGED, "lvmh.kind": "push" }).catch(() => []),
      ];
      for (const c of helpers) {
        // Only old ones: a recent one may belong to another daemon on the same engine that is cloning right
        // now (helpers time out after 10 minutes).
        if (Date.now() / 1000 - c.Created > STALE_HELPER_S) {
          await engine.containerRemove(c.Id, true).catch(() => {});
        }
      }
    },

    close() {
      engine.close();
      return Promise.resolve();
    },
  };
}

/** Await an engine call, its failure turned into a domain error. */
async function domain<T>(call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (error) {
    throw toDomain(error);
  }
}

/** Engine unreachable → UnavailableError; any other engine or git failure → UpstreamError with its message. */
function toDomain(error: unknown): Error {
  if (error instanceof DockerUnreachableError) {
    return new UnavailableError(`Docker is unreachable: ${error.message}`);
  }
  if (isDomainError(error)) return error;
  return new UpstreamError(error instanceof Error ? error.message : String(error));
}
