/**
 * The checks lvmh runs against the API server before it spawns there: it answers (`GET /version`), lvmh may
 * do every verb it uses on every resource (one SelfSubjectAccessReview each), and the namespace admits a
 * worker Pod as lvmh builds it (a `dryRun=All` create: PodSecurity, quotas and LimitRanges speak here, before
 * a person waits). What is missing comes back as one sentence naming the verbs and resources.
 */
import type { KubeClient } from "./client.ts";

/** Every verb lvmh uses, per namespaced resource: the Role in `deploy/kubernetes/` grants exactly these. */
export const KUBE_PERMISSIONS: readonly { resource: string; verbs: readonly string[] }[] = [
  { resource: "pods", verbs: ["create", "get", "list", "watch", "delete"] },
  { resource: "pods/log", verbs: ["get"] },
  { resource: "secrets", verbs: ["create", "get", "list", "delete"] },
  { resource: "persistentvolumeclaims", verbs: ["create", "get", "list", "delete"] },
];

/** One call of the preflight may take this long. */
const PREFLIGHT_CALL_MS = 10_000;

/** The SelfSubjectAccessReview body for one verb on one (sub)resource. */
export function accessReviewBody(namespace: string, verb: string, resource: string): Record<string, unknown> {
  const [name, subresource] = resource.split("/");
  return {
    apiVersion: "authorization.k8s.io/v1",
    kind: "SelfSubjectAccessReview",
    spec: {
      resourceAttributes: { namespace, verb, resource: name, ...(subresource ? { subresource } : {}) },
    },
  };
}

/**
 * Run the checks.
 * @param samplePod a worker Pod body as lvmh would create it.
 * @returns null when all is well, else the one sentence saying what is missing.
 */
export async function preflight(
  client: KubeClient,
  samplePod: Record<string, unknown>,
): Promise<string | null> {
  const signal = () => AbortSignal.timeout(PREFLIGHT_CALL_MS);
  try {
    await client.json("GET", "/version", { signal: signal() });
  } catch (error) {
    return `Kubernetes: the API server ${client.url} does not answer: ${(error as Error).message}`;
  }
  const missing: string[] = [];
  try {
    for (const { resource, verbs } of KUBE_PERMISSIONS) {
      for (const verb of verbs) {
        const review = await client.json<{ status?: { allowed?: boolean } }>(
          "POST",
          "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
          { body: accessReviewBody(client.namespace, verb, resource), signal: signal() },
        );
        if (review.status?.allowed !== true) missing.push(`${verb} ${resource}`);
      }
    }
  } catch (error) {
    return `Kubernetes: lvmh cannot check its permissions (create selfsubjectaccessreviews): ${
      (error as Error).message
    }`;
  }
  if (missing.length) {
    return `Kubernetes: lvmh may not ${missing.join(", ")} in namespace "${client.namespace}" ` +
      `(grant it in the Role, see deploy/kubernetes/rbac.yaml)`;
  }
  try {
    await client.json("POST", client.path("pods"), {
      query: { dryRun: "All", fieldValidation: "Strict" },
      body: samplePod,
      signal: signal(),
    });
  } catch (error) {
    return `Kubernetes: namespace "${client.namespace}" refuses a worker Pod (dry run): ${
      (error as Error).message
    }`;
  }
  return null;
}
