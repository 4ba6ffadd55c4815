/**
 * Following a new worker Pod until it runs. Kubernetes workers make their own working copy in an init
 * container, so the spawn pipeline cannot run the clone itself: it waits here instead, and hears each new
 * state (queued with the scheduler's words, cloning, starting) as progress. A Pod that fails, ends, is
 * deleted, never appears or does not start in time fails the spawn with the reason in words.
 */
import { UpstreamError } from "../errors.ts";
import { podView } from "../kube/pod_state.ts";
import { GONE_TIMEOUT_MS, type WorkerPods } from "./kube_worker_pods.ts";

/** How long a worker may clone and start after it was scheduled. */
const CLONE_TIMEOUT_MS = 15 * 60_000;

/**
 * Resolve once the worker Pod `id` runs.
 * @throws {UpstreamError} with the Pod's reason when it will not.
 */
export function awaitWorkerStart(
  pods: WorkerPods,
  id: string,
  progress: (state: "queued" | "cloning" | "starting", message: string | null) => void,
  startTimeoutMs: number,
): Promise<void> {
  let last = "";
  const begun = Date.now();
  return pods.until<{ ok: true } | { error: Error }>(() => {
    const pod = pods.get(id);
    if (!pod) {
      return pods.listed && Date.now() - begun > GONE_TIMEOUT_MS
        ? { error: new UpstreamError(`The worker Pod ${id} did not appear`) }
        : undefined;
    }
    if (pod.metadata.deletionTimestamp) {
      return { error: new UpstreamError(`The worker Pod ${id} was deleted`) };
    }
    const view = podView(pod, Date.now(), startTimeoutMs);
    switch (view.state) {
      case "running":
        return { ok: true };
      case "failed":
        return { error: new UpstreamError(view.message) };
      case "ended":
        return {
          error: new UpstreamError(
            view.oom ? "the worker ran out of memory (OOMKilled)" : `the worker exited with ${view.exitCode}`,
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
  }, startTimeoutMs + CLONE_TIMEOUT_MS).then((outcome) => {
    if (!outcome) throw new UpstreamError(`The worker Pod ${id} did not start in time`);
    if ("error" in outcome) throw outcome.error;
  });
}
