/**
 * The Kubernetes backend's sweep of what a daemon that died left in the namespace: helper Pods and their
 * token Secrets it was running, and the claims and Secrets of sessions lvmh no longer knows (a discard or a
 * failed spawn cut short). It is apart from the backend's per-session steps because it works on the whole
 * namespace by label, never on one session it was told of.
 *
 * With several replicas in one namespace (`shared`), a helper this daemon is not running may be another
 * live replica's, at work right now: it is swept only once it cannot be running for anyone, past its own
 * `activeDeadlineSeconds` (the kubelet has ended it by then). Session storage is swept only when
 * `sweepStorage` says so (the daemon lets its leader do it, once its copy of the sessions caught up).
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
/**
 * A helper Pod's deadline when it names none: the helpers' default job time (10 min) and start allowance
 * (2 min), as lib/kube/helper_pods.ts sets them.
 */
const DEFAULT_HELPER_DEADLINE_S = 12 * 60;
/** Past its deadline, a helper is left this long for the kubelet to have ended it. */
const HELPER_DEADLINE_MARGIN_MS = 60_000;

/** What the sweep needs to tell what is still in use. */
export interface SweepDeps {
  /** The helper Pods (and their Secrets, same name) this daemon is running now. */
  helpersRunning(): ReadonlySet<string>;
  /**
   * Whether lvmh still knows a session; without it, session storage is left alone. With replicas it asks the
   * shared database, since a replica's copy may not have every session yet.
   */
  sessionKnown?(sessionId: string): boolean | Promise<boolean>;
  /** Session storage younger than this is never swept. */
  storageGraceMs?: number;
  /** Other daemons (replicas) run helpers in this namespace: another's helper goes only past its deadline. */
  shared?: boolean;
  /** Whether this sweep may delete session storage (default yes). */
  sweepStorage?(): boolean;
  /** The clock (tests). */
  now?(): number;
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
  const now = deps.now?.() ?? Date.now();
  const ageOf = (o: PodLike) => now - (Date.parse(o.metadata.creationTimestamp ?? "") || now);
  // Helper Pods and their token Secrets this daemon is not running: a crashed daemon's. Alone in the
  // namespace, every one of them (their activeDeadlineSeconds has ended any that still ran); with replicas,
  // only those past their deadline, and a Secret with its Pod (or, without one, past the default deadline).
  const mine = deps.helpersRunning();
  const pods = (await list("pods", HELPER_SELECTOR)).filter((o) => !mine.has(o.metadata.name));
  const ended = (o: PodLike & { spec?: { activeDeadlineSeconds?: number } }) =>
    ageOf(o) >
      (o.spec?.activeDeadlineSeconds ?? DEFAULT_HELPER_DEADLINE_S) * 1000 + HELPER_DEADLINE_MARGIN_MS;
  const podsGoing = deps.shared ? pods.filter(ended) : pods;
  const podKept = new Set(pods.filter((o) => !podsGoing.includes(o)).map((o) => o.metadata.name));
  const secrets = (await list("secrets", HELPER_SECRET_SELECTOR)).filter((o) =>
    !mine.has(o.metadata.name) &&
    (!deps.shared || (!podKept.has(o.metadata.name) &&
      (podsGoing.some((p) => p.metadata.name === o.metadata.name) || ended(o))))
  );
  for (const [resource, objects] of [["pods", podsGoing], ["secrets", secrets]] as const) {
    for (const o of objects) {
      await client.json("DELETE", client.path(resource, o.metadata.name), { body: gone })
        .catch(quiet(`${resource} ${o.metadata.name}`));
    }
  }
  // Claims and Secrets of sessions lvmh no longer knows, that no worker Pod uses: what a daemon that died
  // in a discard or a failed spawn left.
  if (!deps.sessionKnown || deps.sweepStorage?.() === false) return;
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
      const age = ageOf(o);
      if (
        !sessionId || withWorker.has(sessionId) || age < grace || await deps.sessionKnown(sessionId)
      ) continue;
      log(`lvmh: deleting ${resource} ${o.metadata.name}: its session is gone`);
      await client.json("DELETE", client.path(resource, o.metadata.name)).catch(
        quiet(`${resource} ${o.metadata.name}`),
      );
    }
  }
}
