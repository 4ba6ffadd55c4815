/**
 * What the Kubernetes backend knows of its worker Pods: one list+watch of them (`lib/kube/watch.ts`), kept
 * as a cache that every step reads instead of asking the API server, and the facts that follow from the
 * Pods it sees. It lives apart from the backend's methods because all of them share it: the credential
 * window of each clone (armed at create, and for clones a restarted daemon finds still running), a finished
 * clone's base handed on once per Pod, and the Pods lvmh deleted itself (their 143 is a stop, not a crash).
 */
import { codeOf, type KubeClient } from "../kube/client.ts";
import { REPO_ANNOTATION, SESSION_LABEL, WORKER_SELECTOR } from "../kube/objects.ts";
import { type CloneReport, cloneReport, type PodLike } from "../kube/pod_state.ts";
import { listWatch } from "../kube/watch.ts";

/** How long a deleted Pod may take to go before lvmh carries on regardless. */
export const GONE_TIMEOUT_MS = 60_000;

/** What the cache needs from the backend's owner. */
export interface WorkerPodsDeps {
  /** A worker's clone made a working copy from this base (called again after a restart: record once). */
  onCloned(sessionId: string, repo: string, report: Extract<CloneReport, { kept: false }>): void;
  log(line: string): void;
  /** Watch tuning (tests). */
  watch?: { backoffMs?: number; timeoutSeconds?: number };
}

/** The watched worker Pods and what the backend keeps about them. */
export interface WorkerPods {
  /** The cached Pod of this name, if the watch has seen it. */
  get(name: string): PodLike | undefined;
  /** Whether the first list has arrived (before it, the cache says nothing about what is missing). */
  readonly listed: boolean;
  /** Sessions whose clone may fetch the credential (once). */
  readonly armed: Set<string>;
  /** Pods lvmh deleted: their 143 is a stop. */
  readonly deletedByUs: Set<string>;
  /** Wait until `test` holds for the cached Pods, checking on every change and every `tickMs`. */
  until<T>(test: () => T | undefined, timeoutMs: number, tickMs?: number): Promise<T | undefined>;
  /** Delete a Pod and wait (bounded) until it is gone: a new Pod of the same session takes its name. */
  deletePod(name: string): Promise<void>;
  /** End the watch (the client stays open: the owner closes it). */
  close(): Promise<void>;
}

/** The session a Pod (or any object lvmh made for a session) belongs to; "" when unlabelled. */
export const sessionOf = (o: PodLike): string => o.metadata.labels?.[SESSION_LABEL] ?? "";

/** Start watching the worker Pods; the watch retries by itself while the API server is away. */
export function watchWorkerPods(client: KubeClient, deps: WorkerPodsDeps): WorkerPods {
  const { log } = deps;
  const pods = new Map<string, PodLike>();
  const listeners = new Set<() => void>();
  const stop = new AbortController();
  const armed = new Set<string>();
  const deletedByUs = new Set<string>();
  /** Pod uids whose clone report was handed on. */
  const reported = new Set<string>();
  let listed = false;
  let troubled = false;

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

  return {
    get: (name) => pods.get(name),
    get listed() {
      return listed;
    },
    armed,
    deletedByUs,
    until,
    deletePod,
    async close() {
      stop.abort();
      await watching;
    },
  };
}
