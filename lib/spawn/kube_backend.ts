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
 */
import type { Config } from "../config.ts";
import { ConflictError, isDomainError, NotFoundError, UnavailableError, UpstreamError } from "../errors.ts";
import { codeOf, KubeClient, type KubeConnection, KubeRetryableError } from "../kube/client.ts";
import {
  claimBody,
  claimName,
  podBody,
  podName,
  REPO_ANNOTATION,
  secretBody,
  secretName,
  SESSION_LABEL,
  WORKER_SELECTOR,
  type WorkerPodSpec,
} from "../kube/objects.ts";
import { type CloneReport, cloneReport, type PodLike, podView } from "../kube/pod_state.ts";
import { preflight } from "../kube/preflight.ts";
import { listWatch } from "../kube/watch.ts";
import {
  HELPER_INPUT_PREFIX,
  HELPER_SECRET_SELECTOR,
  HELPER_SELECTOR,
  kubeHelperRunner,
} from "../kube/helper_pods.ts";
import { agentToken } from "../auth.ts";
import { sessionBundle } from "../../docker/session_bundle.ts";
import { lastLines } from "./containers.ts";
import { type ManagedWorker, MAX_LOG_LINES, RetryableError, type SpawnBackend } from "./backend.ts";

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
  sessionKnown?(sessionId: string): boolean;
  /** Session storage younger than this is never swept (a spawn makes it before the session is listed). */
  storageGraceMs?: number;
}

/** The extra the Kubernetes backend offers tests and the daemon. */
export interface KubeBackend extends SpawnBackend {
  awaitStart: NonNullable<SpawnBackend["awaitStart"]>;
  takeCloneCredential: NonNullable<SpawnBackend["takeCloneCredential"]>;
  close(): Promise<void>;
  /** The preflight's last verdict: null when spawning may go ahead. */
  preflightProblem(): Promise<string | null>;
}

/** Selects everything lvmh made. */
const MANAGED_SELECTOR = "app.kubernetes.io/managed-by=lvmh";
/** A failed preflight is run again on a spawn after this long (a fixed Role needs no restart). */
const PREFLIGHT_RETRY_MS = 30_000;
/** How long a deleted Pod may take to go before lvmh carries on regardless. */
const GONE_TIMEOUT_MS = 60_000;
/** Session storage younger than this is left to the spawn that is making it. */
const STORAGE_GRACE_MS = 15 * 60_000;
/** How long a worker may clone and start after it was scheduled. */
const CLONE_TIMEOUT_MS = 15 * 60_000;

/** Build the backend; its watch starts at once (it retries by itself while the API server is away). */
export function createKubeBackend(config: KubeBackendConfig, deps: KubeBackendDeps): KubeBackend {
  const k = config.kube;
  const client = new KubeClient(k.connection);
  const log = deps.log ?? ((line: string) => console.warn(line));
  const pods = new Map<string, PodLike>();
  const listeners = new Set<() => void>();
  const stop = new AbortController();
  /** Sessions whose clone may fetch the credential (once); armed at create, and for clones a restart found. */
  const armed = new Set<string>();
  /** Pods lvmh deleted: their 143 is a stop. */
  const deletedByUs = new Set<string>();
  /** Pod uids whose clone report was handed on. */
  const reported = new Set<string>();
  let listed = false;
  let troubled = false;

  const sessionOf = (pod: PodLike) => pod.metadata.labels?.[SESSION_LABEL] ?? "";
  const notify = () => {
    for (const l of [...listeners]) l();
  };
  /** Pass a finished clone's base on, and close its credential window. */
  const observe = (pod: PodLike) => {
    const sessionId = sessionOf(pod);
    const clone = pod.status?.initContainerStatuses?.find((c) => c.name === "clone");
    if (clone?.state?.terminated || pod.metadata.deletionTimestamp) armed.delete(sessionId);
    const report = cloneReport(pod);
    const uid = pod.metadata.uid ?? pod.metadata.name;
    if (report && !report.kept && !reported.has(uid)) {
      reported.add(uid);
      try {
        deps.onCloned(sessionId, pod.metadata.annotations?.[REPO_ANNOTATION] ?? "", report);
      } catch (error) {
        log(`lvmh: could not record ${sessionId}'s working copy: ${(error as Error).message}`);
      }
    }
  };

  const watching = listWatch<PodLike>(client, client.path("pods"), WORKER_SELECTOR, {
    onList(items) {
      pods.clear();
      for (const p of items) {
        pods.set(p.metadata.name, p);
        // A daemon restarted mid-spawn: a clone still running asks this daemon for the credential.
        if (!listed && !p.metadata.deletionTimestamp) {
          const clone = p.status?.initContainerStatuses?.find((c) => c.name === "clone");
          if (!clone?.state?.terminated && !p.metadata.annotations?.["lvmh.dev/resume"]) {
            armed.add(sessionOf(p));
          }
        }
        observe(p);
      }
      listed = true;
      troubled = false;
      notify();
    },
    onEvent(e) {
      troubled = false;
      if (e.type === "DELETED") {
        pods.delete(e.object.metadata.name);
        armed.delete(sessionOf(e.object));
      } else {
        pods.set(e.object.metadata.name, e.object);
        observe(e.object);
      }
      notify();
    },
    onTrouble(message) {
      if (!troubled) log(`lvmh: Kubernetes: ${message} (retrying)`);
      troubled = true;
    },
  }, { signal: stop.signal, backoffMs: deps.watch?.backoffMs, timeoutSeconds: deps.watch?.timeoutSeconds });

  /** Wait until `test` holds for the cached Pods, checking on every change and every `tickMs`. */
  const until = <T>(test: () => T | undefined, timeoutMs: number, tickMs = 1000): Promise<T | undefined> =>
    new Promise((resolve) => {
      const done = (value: T | undefined) => {
        listeners.delete(check);
        clearInterval(timer);
        clearTimeout(deadline);
        resolve(value);
      };
      const check = () => {
        const v = test();
        if (v !== undefined) done(v);
      };
      listeners.add(check);
      const timer = setInterval(check, tickMs);
      const deadline = setTimeout(() => done(undefined), timeoutMs);
      check();
    });

  /** Delete a Pod and wait (bounded) until it is gone: a new Pod of the same session takes its name. */
  const deletePod = async (name: string) => {
    deletedByUs.add(name);
    try {
      await client.json("DELETE", client.path("pods", name), {
        body: {
          kind: "DeleteOptions",
          apiVersion: "v1",
          gracePeriodSeconds: 10,
          propagationPolicy: "Background",
        },
      });
    } catch (error) {
      if (codeOf(error) === 404) return;
      throw error;
    }
    // The watch says so; a GET every few seconds covers a watch that is down meanwhile.
    let lastGet = 0;
    await until(
      () => {
        if (listed && !pods.has(name)) return true;
        if (Date.now() - lastGet > 2000) {
          lastGet = Date.now();
          client.json("GET", client.path("pods", name)).catch((e) => {
            if (codeOf(e) === 404) {
              pods.delete(name);
              notify();
            }
          });
        }
        return undefined;
      },
      GONE_TIMEOUT_MS,
      250,
    );
  };

  /** Create an object; one that exists (a repeated step) is read and reused when it is the session's. */
  const createOrReuse = async (resource: string, name: string, sessionId: string, body: unknown) => {
    try {
      await client.json("POST", client.path(resource), { body, query: { fieldValidation: "Strict" } });
    } catch (error) {
      if (codeOf(error) !== 409) throw error;
      const found = await client.json<PodLike>("GET", client.path(resource, name));
      if (found.metadata.labels?.[SESSION_LABEL] !== sessionId) {
        throw new ConflictError(`Kubernetes: ${resource} "${name}" exists and is not lvmh's`);
      }
    }
  };

  let verdict: { at: number; problem: string | null } | null = null;
  let running: Promise<string | null> | null = null;
  const samplePod = () =>
    podBody({
      sessionId: "00000000-0000-4000-8000-000000000000",
      repo: "preflight/sample",
      branch: null,
      image: config.workerImage,
      agentUrl: "ws://127.0.0.1/agent/ws",
      resume: false,
      clone: {
        url: "https://example.invalid/preflight.git",
        baseBranch: null,
        baseSha: null,
        branch: "lvmh/0",
      },
      llmSecret: k.llmSecret,
      models: config.modelsJson !== null,
      limits: config.workerLimits,
    });
  const preflightProblem = async (): Promise<string | null> => {
    if (verdict && (verdict.problem === null || Date.now() - verdict.at < PREFLIGHT_RETRY_MS)) {
      return verdict.problem;
    }
    running ??= preflight(client, samplePod()).then((problem) => {
      if (problem && problem !== verdict?.problem) log(`lvmh: ${problem}`);
      verdict = { at: Date.now(), problem };
      return problem;
    }).finally(() => running = null);
    return await running;
  };

  // At start, so a missing permission is in the log before anyone spawns.
  preflightProblem().catch(() => {});

  const readLogs = async (name: string, tail: number) => {
    try {
      return lastLines(
        await client.text(client.path("pods", name, "log"), { container: "worker", tailLines: String(tail) }),
        tail,
      );
    } catch (error) {
      if (codeOf(error) === 404) throw new NotFoundError("The worker is gone");
      // The worker never started (a failed clone): its init container's log says why.
      if (codeOf(error) === 400) {
        return lastLines(
          await client.text(client.path("pods", name, "log"), {
            container: "clone",
            tailLines: String(tail),
          }),
          tail,
        );
      }
      throw error;
    }
  };

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
        "persistentvolumeclaims",
        claimName(sessionId),
        sessionId,
        claimBody(sessionId, repo, { size: k.storageSize, storageClass: k.storageClass }),
      );
    },

    async createWorker(w) {
      const clone = w.clone ?? { url: "", baseBranch: null, baseSha: null, branch: "" };
      const secret = secretBody(w.sessionId, { token: w.token, modelsJson: modelsText() });
      await createOrReuse("secrets", secretName(w.sessionId), w.sessionId, secret);
      // The Secret is immutable: one kept from before a change (a new daemon token, another models.json) is
      // made again, since the worker would otherwise present a token the daemon no longer accepts.
      const kept = await client.json<{ data?: Record<string, string> }>(
        "GET",
        client.path("secrets", secretName(w.sessionId)),
      );
      const wanted = (secret as { stringData: Record<string, string> }).stringData;
      const same = Object.keys(wanted).length === Object.keys(kept.data ?? {}).length &&
        Object.entries(wanted).every(([key, v]) => kept.data?.[key] === encodeBase64(v));
      if (!same) {
        await client.json("DELETE", client.path("secrets", secretName(w.sessionId))).catch((error) => {
          if (codeOf(error) !== 404) throw error;
        });
        await client.json("POST", client.path("secrets"), {
          body: secret,
          query: { fieldValidation: "Strict" },
        });
      }
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
          await deletePod(name);
        }
      }
    },

    startWorker: () => Promise.resolve(),

    awaitStart(id, progress) {
      let last = "";
      const begun = Date.now();
      return until<{ ok: true } | { error: Error }>(() => {
        const pod = pods.get(id);
        if (!pod) {
          return listed && Date.now() - begun > GONE_TIMEOUT_MS
            ? { error: new UpstreamError(`The worker Pod ${id} did not appear`) }
            : undefined;
        }
        if (pod.metadata.deletionTimestamp) {
          return { error: new UpstreamError(`The worker Pod ${id} was deleted`) };
        }
        const view = podView(pod, Date.now(), k.startTimeoutMs);
        switch (view.state) {
          case "running":
            return { ok: true };
          case "failed":
            return { error: new UpstreamError(view.message) };
          case "ended":
            return {
              error: new UpstreamError(
                view.oom
                  ? "the worker ran out of memory (OOMKilled)"
                  : `the worker exited with ${view.exitCode}`,
              ),
            };
          default: {
            const message = view.state === "queued" ? view.message : null;
            const key = `${view.state}:${message}`;
            if (key !== last) {
              last = key;
              progress(view.state, message);
            }
            return undefined;
          }
        }
      }, k.startTimeoutMs + CLONE_TIMEOUT_MS).then((outcome) => {
        if (!outcome) throw new UpstreamError(`The worker Pod ${id} did not start in time`);
        if ("error" in outcome) throw outcome.error;
      });
    },

    takeCloneCredential(sessionId) {
      if (sessionId.startsWith(HELPER_INPUT_PREFIX)) return helpers.take(sessionId);
      if (!listed && !armed.has(sessionId)) {
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
      await deletePod(id).catch((error) => log(`lvmh: could not delete Pod ${id}: ${error.message}`));
    },

    async removeSessionStorage(sessionId) {
      armed.delete(sessionId);
      const quiet = (what: string) => (error: Error) => {
        if (codeOf(error) !== 404) log(`lvmh: could not delete ${what}: ${error.message}`);
      };
      await deletePod(podName(sessionId)).catch(quiet(`Pod ${podName(sessionId)}`));
      await client.json("DELETE", client.path("secrets", secretName(sessionId))).catch(
        quiet("the session Secret"),
      );
      await client.json("DELETE", client.path("persistentvolumeclaims", claimName(sessionId)))
        .catch(quiet("the session claim"));
    },

    // One claim holds the working copy and pi's session files.
    workingCopyExists: (sessionId) => backend.storageExists(sessionId),

    async storageExists(sessionId) {
      try {
        await client.json("GET", client.path("persistentvolumeclaims", claimName(sessionId)));
        return true;
      } catch (error) {
        if (codeOf(error) === 404) return false;
        throw error;
      }
    },

    async stopSession(sessionId) {
      const name = podName(sessionId);
      try {
        await client.json("GET", client.path("pods", name));
      } catch (error) {
        if (codeOf(error) === 404) throw new NotFoundError(`Session "${sessionId}" has no worker Pod`);
        throw error;
      }
      armed.delete(sessionId);
      const logs = await readLogs(name, MAX_LOG_LINES).catch(() => "");
      await deletePod(name);
      return logs;
    },

    helpers,

    async bundle(sessionId, o) {
      return (await sessionBundle(helpers, { sessionId, ...o })).bundle;
    },

    async workerStatus(id) {
      let pod: PodLike;
      try {
        pod = await client.json<PodLike>("GET", client.path("pods", id));
      } catch (error) {
        if (codeOf(error) === 404) return null;
        throw error;
      }
      const view = podView(pod, Date.now(), k.startTimeoutMs);
      if (view.state === "ended") {
        const stopped = deletedByUs.has(id) && view.exitCode === 143;
        return { running: false, exitCode: stopped ? 0 : view.exitCode, oom: view.oom };
      }
      if (view.state === "failed") {
        return { running: false, exitCode: 1, oom: /OOMKilled/.test(view.message) };
      }
      return { running: !pod.metadata.deletionTimestamp, exitCode: 0, oom: false };
    },

    workerLogs: (id, tail) => readLogs(id, tail),

    async listWorkers() {
      const list = await client.json<{ items: PodLike[] }>("GET", client.path("pods"), {
        query: { labelSelector: WORKER_SELECTOR },
      });
      const now = Date.now();
      const workers: ManagedWorker[] = [];
      for (const p of list.items ?? []) {
        const sessionId = sessionOf(p);
        if (!sessionId) continue;
        const state = podView(p, now, k.startTimeoutMs).state;
        workers.push({
          id: p.metadata.name,
          sessionId,
          repo: p.metadata.annotations?.[REPO_ANNOTATION] ?? "",
          running: !p.metadata.deletionTimestamp && state !== "ended" && state !== "failed",
          createdAt: Date.parse(p.metadata.creationTimestamp ?? "") || now,
        });
      }
      return workers;
    },

    async sweep() {
      const quiet = (what: string) => (error: Error) => {
        if (codeOf(error) !== 404) log(`lvmh: could not sweep ${what}: ${error.message}`);
      };
      const list = async (resource: string, selector: string) =>
        (await client.json<{ items?: PodLike[] }>("GET", client.path(resource), {
          query: { labelSelector: selector },
        })).items ?? [];
      const gone = { kind: "DeleteOptions", apiVersion: "v1", gracePeriodSeconds: 0 };
      // Helper Pods and their token Secrets this daemon is not running: a crashed daemon's (one daemon per
      // namespace; their activeDeadlineSeconds has ended any that still ran).
      const mine = helpers.running();
      for (const [resource, selector] of [["pods", HELPER_SELECTOR], ["secrets", HELPER_SECRET_SELECTOR]]) {
        for (const o of await list(resource, selector)) {
          if (mine.has(o.metadata.name)) continue;
          await client.json("DELETE", client.path(resource, o.metadata.name), { body: gone })
            .catch(quiet(`${resource} ${o.metadata.name}`));
        }
      }
      // Claims and Secrets of sessions lvmh no longer knows, that no worker Pod uses: what a daemon that died
      // in a discard or a failed spawn left.
      if (!deps.sessionKnown) return;
      const withWorker = new Set((await list("pods", WORKER_SELECTOR)).map(sessionOf));
      const grace = deps.storageGraceMs ?? STORAGE_GRACE_MS;
      for (
        const [resource, component] of [["persistentvolumeclaims", "workspace"], [
          "secrets",
          "session-secret",
        ]]
      ) {
        for (
          const o of await list(resource, `${MANAGED_SELECTOR},app.kubernetes.io/component=${component}`)
        ) {
          const sessionId = sessionOf(o);
          const age = Date.now() - (Date.parse(o.metadata.creationTimestamp ?? "") || Date.now());
          if (
            !sessionId || withWorker.has(sessionId) || deps.sessionKnown(sessionId) || age < grace
          ) continue;
          log(`lvmh: deleting ${resource} ${o.metadata.name}: its session is gone`);
          await client.json("DELETE", client.path(resource, o.metadata.name)).catch(
            quiet(`${resource} ${o.metadata.name}`),
          );
        }
      }
    },

    async close() {
      stop.abort();
      await watching;
      client.close();
    },
  };
  return wrap(backend);
}

/** Base64 of UTF-8 text, as the API server shows a Secret's `data`. */
function encodeBase64(text: string): string {
  let binary = "";
  for (const b of new TextEncoder().encode(text)) binary += String.fromCharCode(b);
  return btoa(binary);
}

/** Every method's failures as domain kinds (a retryable API answer is the pipeline's RetryableError). */
function wrap(b: KubeBackend): KubeBackend {
  const out = { ...b } as Record<string, unknown>;
  for (const [name, fn] of Object.entries(b)) {
    if (typeof fn !== "function" || name === "takeCloneCredential") continue;
    out[name] = async (...args: unknown[]) => {
      try {
        return await (fn as (...a: unknown[]) => Promise<unknown>)(...args);
      } catch (error) {
        if (error instanceof KubeRetryableError) throw new RetryableError(error.message);
        if (isDomainError(error)) throw error;
        throw new UpstreamError(error instanceof Error ? error.message : String(error));
      }
    };
  }
  return out as unknown as KubeBackend;
}
