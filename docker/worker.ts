/**
 * The worker container: its image (built from `docker/worker.Dockerfile` when missing) and the create
 * body that carries the container contract with the bridge (env, mounts, labels, init, network).
 */
import type { Engine, Labels } from "./engine.ts";
import {
  contextDigest,
  contextStream,
  PROJECT_ROOT,
  WORKER_CONTEXT_PATHS,
  WORKER_DOCKERFILE,
} from "./context.ts";
import { DockerNotFoundError } from "./errors.ts";

/** Labels every lvmh-made object carries, so a restart or a cleanup can find them. */
export const MANAGED: Labels = { "lvmh.managed": "true" };

/**
 * Build `image` from the worker Dockerfile with `BASE_IMAGE=baseImage`.
 * @param options.contextRoot where `docker/` and `plugin/` are (the project root by default).
 * @throws {DockerBuildError} with the engine's message (e.g. a base image that is not local).
 */
export async function buildWorkerImage(
  engine: Engine,
  options: { image: string; baseImage: string; network: string; contextRoot?: string },
): Promise<void> {
  const root = options.contextRoot ?? PROJECT_ROOT;
  await engine.imageBuild(contextStream(root, WORKER_CONTEXT_PATHS), {
    tag: options.image,
    dockerfile: WORKER_DOCKERFILE,
    buildargs: { BASE_IMAGE: options.baseImage },
    labels: { ...MANAGED, "lvmh.kind": "worker-image", "lvmh.context": await contextDigest(root) },
    // RUN steps have no network otherwise (a base image without git installs it with apt).
    networkmode: options.network,
  });
}

/**
 * Whether `image` must be built: it is missing, or lvmh built it from other sources than these. An image
 * lvmh did not build (no `lvmh.kind` label, e.g. one supplied through LVMH_WORKER_IMAGE) is used as it is.
 * @throws {DockerError} when the engine fails otherwise.
 */
export async function workerImageStale(
  engine: Engine,
  image: string,
  contextRoot = PROJECT_ROOT,
): Promise<boolean> {
  let labels: Labels;
  try {
    labels = (await engine.imageInspect(image)).Config.Labels ?? {};
  } catch (error) {
    if (error instanceof DockerNotFoundError) return true;
    throw error;
  }
  if (labels["lvmh.kind"] !== "worker-image") return false;
  return labels["lvmh.context"] !== await contextDigest(contextRoot);
}

/** What a worker container needs to know. */
export interface WorkerSpec {
  image: string;
  sessionId: string;
  repo: string;
  branch: string | null;
  /** The session's own working copy (`lvmh-work-<id>`) at /workspace; the repository cache is not mounted. */
  workVolume: string;
  sessionVolume: string;
  network: string;
  /** The agent socket URL the bridge dials. */
  agentUrl: string;
  /** The daemon's token (the plugin's bearer credential). */
  token: string;
  providerKey: string | null;
  /** Host path of models.json, bind-mounted read-only. */
  modelsJson: string | null;
  /** A file the bridge waits for before it opens the session (the working copy is then made). */
  readyFile?: string;
  /** The session ran before (a resume): `LVMH_RESUME=1`. */
  resume?: boolean;
  /** Resource limits; a null field (or none at all) is no limit. */
  limits?: { memoryBytes: number | null; cpus: number | null; pids: number | null };
}

/** Labels of a session's worker container. */
export function workerLabels(sessionId: string, repo: string): Labels {
  return { ...MANAGED, "lvmh.kind": "worker", "lvmh.session": sessionId, "lvmh.repo": repo };
}

/** HostConfig fields for the configured limits. Memory includes swap, so a runaway build is stopped, not slowed. */
function limits(l: WorkerSpec["limits"]): Record<string, number> {
  const out: Record<string, number> = {};
  if (l?.memoryBytes) out.Memory = out.MemorySwap = l.memoryBytes;
  if (l?.cpus) out.NanoCpus = Math.round(l.cpus * 1e9);
  if (l?.pids) out.PidsLimit = l.pids;
  return out;
}

/** The `POST /containers/create` body for one session. */
export function workerCreateBody(s: WorkerSpec): Record<string, unknown> {
  const env = [
    `LVMH_URL=${s.agentUrl}`,
    `LVMH_TOKEN=${s.token}`,
    `LVMH_SESSION_ID=${s.sessionId}`,
    "LVMH_AGENT=1",
    `LVMH_REPO=${s.repo}`,
    "NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt",
  ];
  if (s.branch) env.push(`LVMH_BRANCH=${s.branch}`);
  if (s.readyFile) env.push(`LVMH_READY_FILE=${s.readyFile}`);
  if (s.resume) env.push("LVMH_RESUME=1");
  if (s.providerKey) env.push(`ZAI_RENAUD_API_KEY=${s.providerKey}`);
  const mounts: Record<string, unknown>[] = [
    { Type: "volume", Source: s.workVolume, Target: "/workspace" },
    { Type: "volume", Source: s.sessionVolume, Target: "/pi-sessions" },
  ];
  if (s.modelsJson) {
    // A bind through Mounts (not Binds) fails with 400 when the file is missing, instead of
    // dockerd silently creating a directory in its place.
    mounts.push({ Type: "bind", Source: s.modelsJson, Target: "/etc/lvmh/models.json", ReadOnly: true });
    env.push("LVMH_MODELS_JSON=/etc/lvmh/models.json");
  }
  return {
    Image: s.image,
    Cmd: ["node", "/bridge/index.mjs"],
    Env: env,
    Labels: workerLabels(s.sessionId, s.repo),
    WorkingDir: "/workspace",
    Tty: false,
    HostConfig: {
      // Under a daemon started with --bridge=none any other mode gives a loopback-only container silently.
      NetworkMode: s.network,
      // tini as PID 1 forwards SIGTERM, so a stop takes milliseconds, not the 10 s kill timeout.
      Init: true,
      Mounts: mounts,
      ...limits(s.limits),
    },
  };
}
