/**
 * Kubernetes as a spawn backend: per session a Secret (its agent token), a ReadWriteOnce claim (working copy
 * and pi's files) and a Pod whose init container clones into the claim (`lib/kube/objects.ts`). The worker
 * makes its own working copy, so the pipeline follows the Pod (`awaitStart`) instead of running git helpers;
 * the clone's base is read from its `terminated.message` and handed to `onCloned`, which records it.
 *
 * States come from one list+watch of lvmh's worker Pods (`lib/kube/watch.ts`). The GitLab token is handed to
 * a cloning init container once, over the daemon's own route, never through the API server. Stop deletes
 * the Pod and keeps claim and Secret; discard deletes those too. A worker lvmh deleted that ends with 143
 * (SIGTERM) was stopped, not crashed.
 *
 * This module assembles the backend from its parts, each in a `kube_*.ts` file beside it: the watched Pod
 * cache (`kube_worker_pods.ts`), the kept preflight verdict, the session's claim and Secret, the wait for a
 * new worker to run, its logs and status, the sweep of leftovers, and the mapping of failures to domain kinds.
 */
import type { Config } from "../config.ts";
import { ConflictError, NotFoundError, UnavailableError, UpstreamError } from "../errors.ts";
import { codeOf, KubeClient, type KubeConnection } from "../kube/client.ts";
import {
  claimBody,
  claimName,
  podBody,
  podName,
  secretBody,
  secretName,
  SESSION_LABEL,
  type WorkerPodSpec,
} from "../kube/objects.ts";
import { type CloneReport, type PodLike, podView } from "../kube/pod_state.ts";
import { HELPER_INPUT_PREFIX, kubeHelperRunner } from "../kube/helper_pods.ts";
import { agentToken } from "../auth.ts";
import { sessionBundle } from "../../docker/session_bundle.ts";
import { MAX_LOG_LINES, type SpawnBackend } from "./backend.ts";
import { sessionOf, watchWorkerPods } from "./kube_worker_pods.ts";
import { preflightVerdict } from "./kube_preflight_verdict.ts";
import { claimExists, createOrReuse, putSessionSecret } from "./kube_session_objects.ts";
import { awaitWorkerStart } from "./kube_worker_start.ts";
import { readWorkerLogs } from "./kube_worker_logs.ts";
import { listWorkerPods, workerPodStatus } from "./kube_worker_status.ts";
import { sweepLeftovers } from "./kube_sweep.ts";
import { withDomainErrors } from "./kube_domain_errors.ts";

/** The configuration the Kubernetes backend reads. */
export type KubeBackendConfig =
  & Pick<Config, "workerImage" | "modelsJson">
  // The agent URL and the daemon token (helper Pods' one-off tokens); tests may leave them out.
  & Partial<Pick<Config, "token" | "workerUrl" | "port">>
  & {
    kube: {
      connection: KubeConnection;
      storageClass: string | null;
      storageSize: string;
      llmSecret: string | null;
      startTimeoutMs: number;
    };
    workerLimits: { memoryBytes: number | null; cpus: number | null };
  };

/** What the backend needs from the rest of the daemon. */
export interface KubeBackendDeps {
  /** The GitLab token a clone uses, or null for anonymous clones. */
  credential(): string | null;
  /** A worker's clone made a working copy from this base (called again after a restart: record once). */
  onCloned(sessionId: string, repo: string, report: Extract<CloneReport, { kept: false }>): void;
  /** How the backend reports trouble it gets past by itself (the daemon's log). */
  log?(line: string): void;
  /** Watch tuning (tests). */
  watch?: { backoffMs?: number; timeoutSeconds?: number };
  /**
   * Whether lvmh still knows a session (stopped ones included): `sweep` deletes the claims and Secrets of
   * sessions it does not know and that have no worker Pod. Without it, `sweep` leaves session storage alone.
   */
  sessionKnown?(sessionId: string): boolean | Promise<boolean>;
  /** Session storage younger than this is never swept (a spawn makes it before the session is listed). */
  storageGraceMs?: number;
  /** Other replicas run helpers in this namespace: `sweep` leaves theirs until past their deadline. */
  shared?: boolean;
  /** Whether `sweep` may delete session storage now (default yes; with replicas, their leader's). */
  sweepStorage?(): boolean;
}

/** The extra the Kubernetes backend offers tests and the daemon. */
export interface KubeBackend extends SpawnBackend {
  awaitStart: NonNullable<SpawnBackend["awaitStart"]>;
  takeCloneCredential: NonNullable<SpawnBackend["takeCloneCredential"]>;
  close(): Promise<void>;
  /** The preflight's last verdict: null when spawning may go ahead. */
  preflightProblem(): Promise<string | null>;
}

/** Build the backend; its watch starts at once (it retries by itself while the API server is away). */
export function createKubeBackend(config: KubeBackendConfig, deps: KubeBackendDeps): KubeBackend {
  const k = config.kube;
  const client = new KubeClient(k.connection);
  const log = deps.log ?? ((line: string) => console.warn(line));
  const pods = watchWorkerPods(client, { onCloned: deps.onCloned, log, watch: deps.watch });
  const { armed, deletedByUs } = pods;

  const preflightProblem = preflightVerdict(client, {
    workerImage: config.workerImage,
    llmSecret: k.llmSecret,
    models: config.modelsJson !== null,
    limits: config.workerLimits,
  }, log);
  // At start, so a missing permission is in the log before anyone spawns.
  preflightProblem().catch(() => {});

  const modelsText = () => config.modelsJson ? Deno.readTextFileSync(config.modelsJson) : null;

  const helpers = kubeHelperRunner({
    client,
    image: config.workerImage,
    agentUrl: config.workerUrl ?? `ws://127.0.0.1:${config.port ?? 0}/agent/ws`,
    agentToken: (id) => {
      if (!config.token) throw new UpstreamError("Kubernetes helpers need the daemon's token");
      return agentToken(config.token, id);
    },
    limits: config.workerLimits,
    nodeOf(sessionId) {
      // The claim is ReadWriteOnce: while the worker runs, the helper must run on its node.
      const pod = pods.get(podName(sessionId)) as (PodLike & { spec?: { nodeName?: string } }) | undefined;
      if (!pod || pod.metadata.deletionTimestamp) return null;
      const state = podView(pod, Date.now(), k.startTimeoutMs).state;
      return state === "ended" || state === "failed" ? null : pod.spec?.nodeName ?? null;
    },
  });

  const backend: KubeBackend = {
    async ping() {
      const problem = await preflightProblem();
      if (problem) throw new UnavailableError(problem);
    },
    preflightProblem,

    imageCurrent: () => Promise.resolve(true),

    buildImage: () =>
      Promise.reject(
        new UpstreamError(
          "Kubernetes builds no image: build docker/worker.Dockerfile, push it, set LVMH_WORKER_IMAGE",
        ),
      ),

    async createStorage({ sessionId, repo }) {
      await createOrReuse(
        client,
        "persistentvolumeclaims",
        claimName(sessionId),
        sessionId,
        claimBody(sessionId, repo, { size: k.storageSize, storageClass: k.storageClass }),
      );
    },

    async createWorker(w) {
      const clone = w.clone ?? { url: "", baseBranch: null, baseSha: null, branch: "" };
      await putSessionSecret(
        client,
        w.sessionId,
        secretBody(w.sessionId, { token: w.token, modelsJson: modelsText() }),
      );
      const spec: WorkerPodSpec = {
        sessionId: w.sessionId,
        repo: w.repo,
        branch: w.branch,
        image: config.workerImage,
        agentUrl: w.agentUrl,
        resume: w.resume === true,
        clone,
        llmSecret: k.llmSecret,
        models: config.modelsJson !== null,
        limits: config.workerLimits,
      };
      const body = podBody(spec) as { metadata: { annotations: Record<string, string> } };
      if (spec.resume) body.metadata.annotations["lvmh.dev/resume"] = "1";
      const name = podName(w.sessionId);
      if (!spec.resume) armed.add(w.sessionId);
      for (let attempt = 0;; attempt++) {
        try {
          await client.json("POST", client.path("pods"), { body, query: { fieldValidation: "Strict" } });
          deletedByUs.delete(name);
          return name;
        } catch (error) {
          if (codeOf(error) !== 409 || attempt > 0) {
            armed.delete(w.sessionId);
            throw error;
          }
          // The session's Pod exists: a live one is reused (a spawn run again), an ended one makes room.
          const found = await client.json<PodLike>("GET", client.path("pods", name)).catch(() => null);
          if (found && found.metadata.labels?.[SESSION_LABEL] !== w.sessionId) {
            throw new ConflictError(`Kubernetes: Pod "${name}" exists and is not lvmh's`);
          }
          const view = found ? podView(found, Date.now(), k.startTimeoutMs) : null;
          if (
            found && !found.metadata.deletionTimestamp && view?.state !== "ended" && view?.state !== "failed"
          ) {
            return name;
          }
          await pods.deletePod(name);
        }
      }
    },

    startWorker: () => Promise.resolve(),

    awaitStart: (id, progress) => awaitWorkerStart(pods, id, progress, k.startTimeoutMs),

    takeCloneCredential(sessionId) {
      if (sessionId.startsWith(HELPER_INPUT_PREFIX)) return helpers.take(sessionId);
      if (!pods.listed && !armed.has(sessionId)) {
        // Restarted mid-spawn: the clones still running are armed once the Pods are listed. Until then an
        // init container is told to ask again (it retries a 503), not refused for good.
        throw new UnavailableError("lvmh is starting: it has not listed its Pods yet, ask again");
      }
      if (!armed.delete(sessionId)) return null;
      return { credential: deps.credential() };
    },

    refreshCache: () => Promise.reject(new UpstreamError("Kubernetes workers clone for themselves")),
    makeWorkingCopy: () => Promise.reject(new UpstreamError("Kubernetes workers clone for themselves")),
    signalReady: () => Promise.resolve(),

    async removeWorker(id) {
      armed.delete(pods.get(id) ? sessionOf(pods.get(id)!) : "");
      await pods.deletePod(id).catch((error) => log(`lvmh: could not delete Pod ${id}: ${error.message}`));
    },

    async removeSessionStorage(sessionId) {
      armed.delete(sessionId);
      const quiet = (what: string) => (error: Error) => {
        if (codeOf(error) !== 404) log(`lvmh: could not delete ${what}: ${error.message}`);
      };
      await pods.deletePod(podName(sessionId)).catch(quiet(`Pod ${podName(sessionId)}`));
      await client.json("DELETE", client.path("secrets", secretName(sessionId))).catch(
        quiet("the session Secret"),
      );
      await client.json("DELETE", client.path("persistentvolumeclaims", claimName(sessionId)))
        .catch(quiet("the session claim"));
    },

    // One claim holds the working copy and pi's session files.
    workingCopyExists: (sessionId) => backend.storageExists(sessionId),

    storageExists: (sessionId) => claimExists(client, sessionId),

    async stopSession(sessionId) {
      const name = podName(sessionId);
      try {
        await client.json("GET", client.path("pods", name));
      } catch (error) {
        if (codeOf(error) === 404) throw new NotFoundError(`Session "${sessionId}" has no worker Pod`);
        throw error;
      }
      armed.delete(sessionId);
      const logs = await readWorkerLogs(client, name, MAX_LOG_LINES).catch(() => "");
      await pods.deletePod(name);
      return logs;
    },

    helpers,

    async bundle(sessionId, o) {
      return (await sessionBundle(helpers, { sessionId, ...o })).bundle;
    },

    workerStatus: (id) => workerPodStatus(client, id, { deletedByUs, startTimeoutMs: k.startTimeoutMs }),

    workerLogs: (id, tail) => readWorkerLogs(client, id, tail),

    listWorkers: () => listWorkerPods(client, k.startTimeoutMs),

    sweep: () =>
      sweepLeftovers(client, {
        helpersRunning: () => helpers.running(),
        sessionKnown: deps.sessionKnown,
        storageGraceMs: deps.storageGraceMs,
        shared: deps.shared,
        sweepStorage: deps.sweepStorage,
        log,
      }),

    async close() {
      await pods.close();
      client.close();
    },
  };
  // takeCloneCredential answers the clone's HTTP ask at once: it stays synchronous.
  return withDomainErrors(backend, ["takeCloneCredential"]);
}
