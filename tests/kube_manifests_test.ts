/**
 * The plain manifests in deploy/kubernetes/ parse, and the Role grants exactly the verbs the Kubernetes
 * backend uses (the list its preflight checks), so neither can drift from the other.
 */
import assert from "node:assert/strict";
import { parseAllDocuments } from "npm:yaml@2.8.1";
import { KUBE_PERMISSIONS } from "../lib/kube/preflight.ts";

const DIR = new URL("../deploy/kubernetes/", import.meta.url);

// deno-lint-ignore no-explicit-any
async function manifests(): Promise<any[]> {
  const out = [];
  for await (const entry of Deno.readDir(DIR)) {
    if (!entry.name.endsWith(".yaml")) continue;
    for (const doc of parseAllDocuments(await Deno.readTextFile(new URL(entry.name, DIR)))) {
      assert.equal(doc.errors.length, 0, `${entry.name}: ${doc.errors.join("; ")}`);
      out.push(doc.toJS());
    }
  }
  return out;
}

Deno.test("deploy/kubernetes: the Role's verbs are exactly the backend's", async () => {
  const role = (await manifests()).find((m) => m.kind === "Role");
  const granted: Record<string, string[]> = {};
  for (const rule of role.rules) {
    assert.deepEqual(rule.apiGroups, [""]);
    for (const r of rule.resources) granted[r] = [...(granted[r] ?? []), ...rule.verbs].sort();
  }
  const used = Object.fromEntries(KUBE_PERMISSIONS.map((p) => [p.resource, [...p.verbs].sort()]));
  assert.deepEqual(granted, used);
});

Deno.test("deploy/kubernetes: two daemon replicas on PostgreSQL, bound to the Role, workers fenced in", async () => {
  const all = await manifests();
  const kinds = all.map((m) => m.kind).sort();
  assert.deepEqual(kinds, [
    "Deployment",
    "Namespace",
    "NetworkPolicy",
    "NetworkPolicy",
    "NetworkPolicy",
    "NetworkPolicy",
    "PodDisruptionBudget",
    "Role",
    "RoleBinding",
    "Service",
    "Service",
    "ServiceAccount",
    "StatefulSet",
  ]);
  for (const m of all.filter((m) => m.kind !== "Namespace")) {
    assert.equal(m.metadata.namespace, "lvmh", m.kind);
  }
  const deployment = all.find((m) => m.kind === "Deployment");
  assert.equal(deployment.spec.replicas, 2);
  assert.equal(deployment.spec.strategy.rollingUpdate.maxUnavailable, 0);
  const pod = deployment.spec.template.spec;
  assert.equal(pod.serviceAccountName, "lvmh");
  // The data dir is a disposable per-replica copy: no claim a second replica could not mount.
  assert.deepEqual(Object.keys(pod.volumes[0]), ["name", "emptyDir"]);
  const env = Object.fromEntries(
    pod.containers[0].env.map((e: { name: string; value?: string }) => [e.name, e.value]),
  );
  const from = Object.fromEntries(
    pod.containers[0].env.map((e: { name: string; valueFrom?: unknown }) => [e.name, e.valueFrom]),
  );
  assert.deepEqual(from.LVMH_DATABASE_URL, { secretKeyRef: { name: "lvmh-postgres", key: "url" } });
  assert.deepEqual(from.LVMH_REPLICA_ID, { fieldRef: { fieldPath: "metadata.name" } });
  assert.equal(pod.containers[0].readinessProbe.httpGet.path, "/api/health");
  // PostgreSQL is not selected by the daemon's Service, nor reachable by workers (their egress names lvmh).
  const database = all.find((m) => m.kind === "StatefulSet").spec.template;
  const service = all.find((m) => m.kind === "Service" && m.metadata.name === "lvmh");
  assert.notEqual(
    database.metadata.labels["app.kubernetes.io/name"],
    service.spec.selector["app.kubernetes.io/name"],
  );
  assert.equal(
    database.spec.containers[0].env.find((e: { name: string }) => e.name === "POSTGRES_PASSWORD")
      .valueFrom.secretKeyRef.name,
    "lvmh-postgres",
  );
  assert.equal(env.LVMH_SPAWN_BACKEND, "kubernetes");
  assert.match(env.LVMH_WORKER_IMAGE, /@sha256:[0-9a-f]{64}$/);
  const binding = all.find((m) => m.kind === "RoleBinding");
  assert.deepEqual(binding.subjects, [{ kind: "ServiceAccount", name: "lvmh", namespace: "lvmh" }]);
  assert.equal(binding.roleRef.name, all.find((m) => m.kind === "Role").metadata.name);
  const policy = all.find((m) => m.metadata.name === "lvmh-workers");
  assert.deepEqual(policy.spec.podSelector.matchLabels, {
    "app.kubernetes.io/managed-by": "lvmh",
    "app.kubernetes.io/component": "worker",
  });
  assert.deepEqual(policy.spec.policyTypes, ["Ingress", "Egress"]);
  assert.deepEqual(policy.spec.ingress, []);
  // Egress: the daemon, DNS, and public addresses on 443 only.
  assert.equal(policy.spec.egress.length, 3);
  const open = policy.spec.egress[2];
  assert.deepEqual(open.ports, [{ protocol: "TCP", port: 443 }]);
  assert.ok(open.to[0].ipBlock.except.includes("10.0.0.0/8"));
  // The push helper gets the workers' egress; the helpers reading a working copy get none.
  const push = all.find((m) => m.metadata.name === "lvmh-push-helpers");
  assert.equal(push.spec.podSelector.matchLabels["lvmh.dev/helper"], "push");
  assert.deepEqual(push.spec.egress, policy.spec.egress);
  const offline = all.find((m) => m.metadata.name === "lvmh-offline-helpers");
  assert.deepEqual(offline.spec.podSelector.matchLabels["lvmh.dev/network"], "none");
  assert.deepEqual([offline.spec.ingress, offline.spec.egress], [[], []]);
});
