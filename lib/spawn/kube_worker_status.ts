/**
 * The worker Pods read straight from the API server (not the watch's cache) for the spawner's checks: one
 * worker's status, and every worker lvmh runs (recovery after a restart, the idle and crash checks). Reading
 * a Pod's state as running, ended or failed is the same rule both ways, so they share this module.
 */
import { codeOf, type KubeClient } from "../kube/client.ts";
import { REPO_ANNOTATION, WORKER_SELECTOR } from "../kube/objects.ts";
import { type PodLike, podView } from "../kube/pod_state.ts";
import type { ManagedWorker } from "./backend.ts";
import { sessionOf } from "./kube_worker_pods.ts";

/**
 * The worker Pod `id`'s status; null when it is gone. A worker lvmh deleted (`deletedByUs`) that ended with
 * 143 (SIGTERM) was stopped, so it exits with 0, not as a crash.
 */
export async function workerPodStatus(
  client: KubeClient,
  id: string,
  o: { deletedByUs: ReadonlySet<string>; startTimeoutMs: number },
): Promise<{ running: boolean; exitCode: number; oom: boolean } | null> {
  let pod: PodLike;
  try {
    pod = await client.json<PodLike>("GET", client.path("pods", id));
  } catch (error) {
    if (codeOf(error) === 404) return null;
    throw error;
  }
  const view = podView(pod, Date.now(), o.startTimeoutMs);
  if (view.state === "ended") {
    const stopped = o.deletedByUs.has(id) && view.exitCode === 143;
    return { running: false, exitCode: stopped ? 0 : view.exitCode, oom: view.oom };
  }
  if (view.state === "failed") {
    return { running: false, exitCode: 1, oom: /OOMKilled/.test(view.message) };
  }
  return { running: !pod.metadata.deletionTimestamp, exitCode: 0, oom: false };
}

/** Every worker Pod of a session, running or not. */
export async function listWorkerPods(client: KubeClient, startTimeoutMs: number): Promise<ManagedWorker[]> {
  const list = await client.json<{ items: PodLike[] }>("GET", client.path("pods"), {
    query: { labelSelector: WORKER_SELECTOR },
  });
  const now = Date.now();
  const workers: ManagedWorker[] = [];
  for (const p of list.items ?? []) {
    const sessionId = sessionOf(p);
    if (!sessionId) continue;
    const state = podView(p, now, startTimeoutMs).state;
    workers.push({
      id: p.metadata.name,
      sessionId,
      repo: p.metadata.annotations?.[REPO_ANNOTATION] ?? "",
      running: !p.metadata.deletionTimestamp && state !== "ended" && state !== "failed",
      createdAt: Date.parse(p.metadata.creationTimestamp ?? "") || now,
    });
  }
  return workers;
}
