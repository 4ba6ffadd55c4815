/**
 * The Kubernetes backend's sweep against the fake API server: helper Pods and their token Secrets a crashed
 * daemon left are deleted (the ones this daemon runs are not); the claims and Secrets of sessions lvmh no
 * longer knows and no worker uses are deleted past their grace time, those of known sessions, of a session
 * whose worker Pod exists, of young ones and of other components are kept. Helper Pods carry
 * `activeDeadlineSeconds`. With replicas in the namespace, another replica's helper is kept until past its
 * deadline, and session storage is swept only when the sweep is allowed to (the leader's).
 */
import assert from "node:assert/strict";
import { startFakeKube } from "../../testing/fixtures/kube_api.ts";
import { kubeClient } from "../../testing/fixtures/kube/client.ts";
import { createKubeBackend } from "./kube_backend.ts";
import { claimBody, secretBody, sessionLabels } from "../kube/objects.ts";
import { helperPodBody } from "../kube/helper_pods.ts";
import { KubeClient } from "../kube/client.ts";
import { sweepLeftovers } from "./kube_sweep.ts";

const KNOWN = "11111111-1111-4111-8111-111111111111";
const GONE = "22222222-2222-4222-8222-222222222222";
const WITH_WORKER = "33333333-3333-4333-8333-333333333333";

Deno.test("kube backend: sweep deletes a crashed daemon's helpers and the storage of sessions that are gone", async () => {
  const fake = await startFakeKube({ kubelet: "script", bookmarkMs: 200 });
  const api = await kubeClient(fake);
  const logs: string[] = [];
  const make = (grace: number) =>
    createKubeBackend({
      workerImage: "registry.example/lvmh-worker:1",
      modelsJson: null,
      workerLimits: { memoryBytes: null, cpus: null },
      kube: {
        connection: {
          url: fake.url,
          namespace: fake.namespace,
          tokenFile: fake.tokenFile,
          caFile: fake.caFile,
        },
        storageClass: null,
        storageSize: "1Gi",
        llmSecret: null,
        startTimeoutMs: 300_000,
      },
    }, {
      credential: () => null,
      onCloned: () => {},
      log: (line) => logs.push(line),
      sessionKnown: (id) => id === KNOWN,
      storageGraceMs: grace,
      watch: { backoffMs: 50 },
    });
  const create = async (resource: string, body: unknown) => {
    const r = await api.call("POST", `~/${resource}`, body);
    assert.equal(r.status, 201, JSON.stringify(r.body));
  };
  try {
    for (const id of [KNOWN, GONE, WITH_WORKER]) {
      await create("persistentvolumeclaims", claimBody(id, "g/p", { size: "1Gi", storageClass: null }));
      await create("secrets", secretBody(id, { token: `agent.${id}.x`, modelsJson: null }));
    }
    // The worker of a session this daemon's store lost (recovery takes it up): its storage stays.
    await create("pods", {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: `lvmh-w-${WITH_WORKER}`, labels: sessionLabels(WITH_WORKER, "worker") },
      spec: { restartPolicy: "Never", containers: [{ name: "worker", image: "x" }] },
    });
    // A helper Pod and its token Secret left by a daemon that died while they ran.
    const job = {
      kind: "push",
      cmd: ["true", "lvmh-push"],
      workingCopy: null,
      network: true,
      secret: "t\n",
      failure: "push failed",
      timeoutMs: 60_000,
    };
    const left = helperPodBody("lvmh-h-push-left", job, {
      image: "x",
      agentUrl: "ws://127.0.0.1:1/agent/ws",
      nodeName: null,
      inputSecret: "lvmh-h-push-left",
      limits: { memoryBytes: null, cpus: null },
    }) as { spec: { activeDeadlineSeconds: number } };
    assert.equal(left.spec.activeDeadlineSeconds, 180, "the job's time plus the start allowance");
    await create("pods", left);
    await create("secrets", {
      apiVersion: "v1",
      kind: "Secret",
      metadata: {
        name: "lvmh-h-push-left",
        labels: { "app.kubernetes.io/managed-by": "lvmh", "app.kubernetes.io/component": "helper-secret" },
      },
      stringData: { token: "agent.helper-x.y" },
    });
    // Someone else's Secret in the namespace is never touched.
    await create("secrets", {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "lvmh-llm" },
      stringData: { "api-key": "k" },
    });

    // Within the grace time: helpers go, session storage stays (a spawn may be making it).
    const young = make(60_000);
    try {
      await young.sweep();
    } finally {
      await young.close();
    }
    const names = (resource: "pods" | "secrets" | "persistentvolumeclaims") =>
      fake.list(resource).filter((o) => !o.metadata.deletionTimestamp).map((o) => o.metadata.name).sort();
    assert.deepEqual(names("pods"), [`lvmh-w-${WITH_WORKER}`]);
    assert.deepEqual(names("secrets"), [
      "lvmh-llm",
      `lvmh-s-${KNOWN}`,
      `lvmh-s-${GONE}`,
      `lvmh-s-${WITH_WORKER}`,
    ]);
    assert.equal(names("persistentvolumeclaims").length, 3);

    // Past it: only the storage of the session that is gone, with no worker, is deleted.
    const old = make(0);
    try {
      await old.sweep();
    } finally {
      await old.close();
    }
    assert.deepEqual(names("secrets"), ["lvmh-llm", `lvmh-s-${KNOWN}`, `lvmh-s-${WITH_WORKER}`]);
    assert.deepEqual(names("persistentvolumeclaims"), [`lvmh-ws-${KNOWN}`, `lvmh-ws-${WITH_WORKER}`]);
    assert.ok(
      logs.some((l) => l.includes(`lvmh-ws-${GONE}`) && l.includes("its session is gone")),
      logs.join("\n"),
    );
  } finally {
    api.close();
    await fake.close();
  }
});

Deno.test("kube sweep with replicas: another replica's running helper stays until past its deadline; storage only when allowed", async () => {
  const fake = await startFakeKube({ kubelet: "script", bookmarkMs: 200 });
  const api = await kubeClient(fake);
  const client = new KubeClient({
    url: fake.url,
    namespace: fake.namespace,
    tokenFile: fake.tokenFile,
    caFile: fake.caFile,
  });
  const create = async (resource: string, body: unknown) => {
    const r = await api.call("POST", `~/${resource}`, body);
    assert.equal(r.status, 201, JSON.stringify(r.body));
  };
  const names = (resource: "pods" | "secrets" | "persistentvolumeclaims") =>
    fake.list(resource).filter((o) => !o.metadata.deletionTimestamp).map((o) => o.metadata.name).sort();
  const helperSecret = (name: string) => ({
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name,
      labels: { "app.kubernetes.io/managed-by": "lvmh", "app.kubernetes.io/component": "helper-secret" },
    },
    stringData: { token: "agent.helper-x.y" },
  });
  const job = {
    kind: "push",
    cmd: ["true", "lvmh-push"],
    workingCopy: null,
    network: true,
    secret: "t\n",
    failure: "push failed",
    timeoutMs: 60_000, // deadline 180 s
  };
  const pod = (name: string) =>
    helperPodBody(name, job, {
      image: "x",
      agentUrl: "ws://127.0.0.1:1/agent/ws",
      nodeName: null,
      inputSecret: name,
      limits: { memoryBytes: null, cpus: null },
    });
  const sweep = (o: { mine?: string[]; at?: number; storage?: boolean }) =>
    sweepLeftovers(client, {
      helpersRunning: () => new Set(o.mine ?? []),
      sessionKnown: () => false,
      storageGraceMs: 0,
      shared: true,
      sweepStorage: () => o.storage ?? false,
      now: () => Date.now() + (o.at ?? 0),
      log: () => {},
    });
  try {
    // Replica B runs a push helper (Pod and Secret); A runs one of its own; a Secret whose Pod B is about
    // to create; the storage of a session nobody knows.
    await create("pods", pod("lvmh-h-push-b"));
    await create("secrets", helperSecret("lvmh-h-push-b"));
    await create("pods", pod("lvmh-h-push-a"));
    await create("secrets", helperSecret("lvmh-h-push-a"));
    await create("secrets", helperSecret("lvmh-h-push-c"));
    await create("persistentvolumeclaims", claimBody(GONE, "g/p", { size: "1Gi", storageClass: null }));

    // A starts and sweeps: nothing of B's goes, nor storage (A does not lead).
    await sweep({ mine: ["lvmh-h-push-a"] });
    assert.deepEqual(names("pods"), ["lvmh-h-push-a", "lvmh-h-push-b"]);
    assert.deepEqual(names("secrets"), ["lvmh-h-push-a", "lvmh-h-push-b", "lvmh-h-push-c"]);
    assert.deepEqual(names("persistentvolumeclaims"), [`lvmh-ws-${GONE}`]);

    // Within its deadline (180 s + the margin) B's helper still stays.
    await sweep({ mine: ["lvmh-h-push-a"], at: 200_000 });
    assert.deepEqual(names("pods"), ["lvmh-h-push-a", "lvmh-h-push-b"]);

    // Past it, B's Pod and Secret go; the lone Secret stays until the default deadline (12 min) has passed;
    // A's own stay; storage goes once this sweep may delete it.
    await sweep({ mine: ["lvmh-h-push-a"], at: 300_000, storage: true });
    assert.deepEqual(names("pods"), ["lvmh-h-push-a"]);
    assert.deepEqual(names("secrets"), ["lvmh-h-push-a", "lvmh-h-push-c"]);
    assert.deepEqual(names("persistentvolumeclaims"), []);
    await sweep({ mine: ["lvmh-h-push-a"], at: 14 * 60_000 });
    assert.deepEqual(names("secrets"), ["lvmh-h-push-a"]);
  } finally {
    client.close();
    api.close();
    await fake.close();
  }
});
