/**
 * The Kubernetes backend's sweep of what a daemon that died left in the namespace: helper Pods and their
 * token Secrets it was running, and the claims and Secrets of sessions lvmh no longer knows (a discard or a
 * failed spawn cut short). It is apart from the backend's per-session steps because it works on the whole
 * namespace by label, never on one session it was told of.
 */
import { codeOf, type KubeClient } from "../kube/client.ts";
import { WORKER_SELECTOR } from "../kube/objects.ts";
import type { PodLike } from "../kube/pod_state.ts";
import { HELPER_SECRET_SELECTOR, HELPER_SELECTOR } from "../kube/helper_pods.ts";
import { sessionOf } from "./kube_worker_pods.ts";

/** Selects everything lvmh made. */
const MANAGED_SELECTOR = "app.kubernetes.io/managed-by=lvmh";
/** Session storage younger than this is left to the spawn that is making it. */
const STORAGE_GRACE_MS = 15 * 60_000;

/** What the sweep needs to tell what is still in use. */
export interface SweepDeps {
  /** The helper Pods (and their Secrets, same name) this daemon is running now. */
  helpersRunning(): ReadonlySet<string>;
  /** Whether lvmh still knows a session; without it, session storage is left alone. */
  sessionKnown?(sessionId: string): boolean;
  /** Session storage younger than this is never swept. */
  storageGraceMs?: number;
  log(line: string): void;
}

/** Delete the leftovers; a delete that fails is logged and the sweep goes on. */
export async function sweepLeftovers(client: KubeClient, deps: SweepDeps): Promise<void> {
  const { log } = deps;
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
  const mine = deps.helpersRunning();
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
    for (const o of await list(resource, `${MANAGED_SELECTOR},app.kubernetes.io/component=${component}`)) {
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
}
