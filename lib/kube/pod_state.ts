/**
 * A worker Pod's status read as lvmh's states. The kubelet's words are kept in the messages (a person reads
 * them in the job list): the scheduler's reason, the registry's pull error, the clone's own last lines
 * (`terminated.message`, which the init container writes, or its log tail on error).
 */

/** The parts of a Pod this module reads. */
export interface PodLike {
  metadata: {
    name: string;
    uid?: string;
    creationTimestamp?: string;
    deletionTimestamp?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    resourceVersion?: string;
  };
  status?: {
    phase?: string;
    reason?: string;
    message?: string;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
    initContainerStatuses?: ContainerStatus[];
    containerStatuses?: ContainerStatus[];
  };
}

interface ContainerStatus {
  name: string;
  state?: {
    waiting?: { reason?: string; message?: string };
    running?: { startedAt?: string };
    terminated?: { exitCode?: number; reason?: string; message?: string };
  };
}

/** How a Pod is, for lvmh. */
export type PodView =
  | { state: "queued"; message: string | null }
  | { state: "cloning" }
  | { state: "starting" }
  | { state: "running" }
  | { state: "failed"; message: string }
  /** The worker ran and ended (by itself, or because lvmh deleted the Pod). */
  | { state: "ended"; exitCode: number; oom: boolean };

/** Waiting reasons that do not get better by waiting: the spawn fails with the kubelet's message. */
export const HOPELESS_WAITING = new Set([
  "ErrImagePull",
  "ImagePullBackOff",
  "InvalidImageName",
  "ErrImageNeverPull",
  "CreateContainerConfigError",
  "CreateContainerError",
]);

const containerOf = (list: ContainerStatus[] | undefined, name: string) => list?.find((c) => c.name === name);

/** The clone's report on success: `lvmh: base <baseBranch> <sha> <branch>` or `lvmh: kept`. */
export type CloneReport = { kept: true } | {
  kept: false;
  baseBranch: string;
  baseSha: string;
  branch: string;
};

/** What the clone reported, once it exited 0; null before that (or for a message that is not a report). */
export function cloneReport(pod: PodLike): CloneReport | null {
  const t = containerOf(pod.status?.initContainerStatuses, "clone")?.state?.terminated;
  if (!t || t.exitCode !== 0) return null;
  const text = t.message ?? "";
  if (/^lvmh: kept$/m.test(text)) return { kept: true };
  const m = text.match(/^lvmh: base (\S+) ([0-9a-f]{40}) (\S+)$/m);
  return m ? { kept: false, baseBranch: m[1], baseSha: m[2], branch: m[3] } : null;
}

/** `reason: message` for a container that waits for good reason not to recover. */
function hopeless(list: ContainerStatus[] | undefined): string | null {
  for (const c of list ?? []) {
    const w = c.state?.waiting;
    if (w?.reason && HOPELESS_WAITING.has(w.reason)) return `${w.reason}: ${w.message ?? ""}`.trim();
  }
  return null;
}

/**
 * Read a Pod.
 * @param startTimeoutMs how long a Pod may stay unscheduled before it counts as failed.
 */
export function podView(pod: PodLike, now: number, startTimeoutMs: number): PodView {
  const st = pod.status ?? {};
  if (st.reason === "Evicted" || st.reason === "DeadlineExceeded") {
    return { state: "failed", message: `${st.reason}: ${st.message ?? ""}`.trim() };
  }
  const clone = containerOf(st.initContainerStatuses, "clone");
  const worker = containerOf(st.containerStatuses, "worker");
  const ct = clone?.state?.terminated;
  if (ct && ct.exitCode !== 0) {
    const why = ct.reason === "OOMKilled"
      ? "the clone ran out of memory (OOMKilled)"
      : (ct.message ?? "").trim();
    return { state: "failed", message: `clone failed: ${why || `exit ${ct.exitCode}`}` };
  }
  const wt = worker?.state?.terminated;
  if (wt) return { state: "ended", exitCode: wt.exitCode ?? -1, oom: wt.reason === "OOMKilled" };
  const stuck = hopeless(st.initContainerStatuses) ?? hopeless(st.containerStatuses);
  if (stuck) return { state: "failed", message: stuck };
  if (worker?.state?.running) return { state: "running" };
  if (st.phase === "Failed") {
    return { state: "failed", message: `${st.reason ?? "Failed"}: ${st.message ?? "the Pod failed"}` };
  }
  if (st.phase === "Succeeded") return { state: "ended", exitCode: 0, oom: false };
  const scheduled = st.conditions?.find((c) => c.type === "PodScheduled");
  if (!scheduled || scheduled.status !== "True") {
    const message = scheduled?.message ?? null;
    const created = Date.parse(pod.metadata.creationTimestamp ?? "");
    if (scheduled?.status === "False" && Number.isFinite(created) && now - created > startTimeoutMs) {
      return {
        state: "failed",
        message: `not scheduled after ${Math.round(startTimeoutMs / 1000)} s: ${
          message ?? scheduled.reason ?? "Unschedulable"
        }`,
      };
    }
    return { state: "queued", message };
  }
  if (ct) return { state: "starting" };
  return { state: "cloning" };
}
