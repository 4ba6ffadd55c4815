import assert from "node:assert/strict";
import {
  claimBody,
  cpuQuantity,
  memoryQuantity,
  podBody,
  secretBody,
  WORKER_SELECTOR,
  type WorkerPodSpec,
} from "./objects.ts";

const ID = "0b7c6a2e-1f3d-4c5b-9a8e-7d6c5b4a3f21";
const spec = (o: Partial<WorkerPodSpec> = {}): WorkerPodSpec => ({
  sessionId: ID,
  repo: "group/sub/project",
  branch: "main",
  image: "registry.example/lvmh-worker@sha256:" + "a".repeat(64),
  agentUrl: "wss://lvmh.lvmh.svc:8686/agent/ws",
  resume: false,
  clone: {
    url: "https://gitlab.example/group/sub/project.git",
    baseBranch: "main",
    baseSha: null,
    branch: "lvmh/0b7c6a2e",
  },
  llmSecret: "lvmh-llm",
  models: true,
  limits: { memoryBytes: 2 * 1024 ** 3, cpus: 1.5 },
  ...o,
});
// deno-lint-ignore no-explicit-any
type Obj = Record<string, any>;

Deno.test("podBody(): a hardened Pod with an init clone, the token as a Secret file and no GitLab token", () => {
  const pod = podBody(spec()) as Obj;
  assert.equal(pod.metadata.name, `lvmh-w-${ID}`);
  assert.equal(pod.metadata.labels["app.kubernetes.io/managed-by"], "lvmh");
  assert.equal(pod.metadata.labels["lvmh.dev/session"], ID);
  // Label values may not hold a path: the repository is an annotation.
  assert.equal(pod.metadata.annotations["lvmh.dev/repo"], "group/sub/project");
  for (const v of Object.values(pod.metadata.labels) as string[]) assert.match(v, /^[A-Za-z0-9._-]{0,63}$/);
  const s = pod.spec;
  assert.equal(s.restartPolicy, "Never");
  assert.equal(s.automountServiceAccountToken, false);
  assert.deepEqual(s.securityContext.seccompProfile, { type: "RuntimeDefault" });
  assert.equal(s.securityContext.runAsNonRoot, true);
  assert.equal(s.securityContext.fsGroup, 1000);
  for (const c of [...s.initContainers, ...s.containers]) {
    assert.equal(c.securityContext.allowPrivilegeEscalation, false);
    assert.deepEqual(c.securityContext.capabilities, { drop: ["ALL"] });
    assert.deepEqual(c.resources, {
      requests: { memory: "2048Mi", cpu: "1500m" },
      limits: { memory: "2048Mi", cpu: "1500m" },
    });
  }
  const clone = s.initContainers[0];
  assert.equal(clone.name, "clone");
  assert.equal(clone.terminationMessagePolicy, "FallbackToLogsOnError");
  // User input only as arguments, after the script's path.
  assert.deepEqual(clone.command, [
    "node",
    "/bridge/clone_init.mjs",
    "clone",
    "https://gitlab.example/group/sub/project.git",
    "main",
    "",
    "lvmh/0b7c6a2e",
  ]);
  const worker = s.containers[0];
  const env = Object.fromEntries(worker.env.map((e: Obj) => [e.name, e.value ?? e.valueFrom]));
  assert.equal(env.LVMH_TOKEN, undefined, "the token is a file, not an env value");
  assert.deepEqual(env.ZAI_RENAUD_API_KEY, { secretKeyRef: { name: "lvmh-llm", key: "api-key" } });
  assert.equal(env.LVMH_MODELS_JSON, "/run/lvmh/models.json");
  const session = s.volumes.find((v: Obj) => v.name === "session");
  assert.equal(session.secret.defaultMode, 0o440);
  assert.equal(session.secret.secretName, `lvmh-s-${ID}`);
  assert.equal(
    s.volumes.find((v: Obj) => v.name === "work").persistentVolumeClaim.claimName,
    `lvmh-ws-${ID}`,
  );
  assert.doesNotMatch(JSON.stringify(pod), /glpat|password|oauth2/);
});

Deno.test("podBody(): a resume keeps the copy, and without limits or an LLM Secret none is set", () => {
  const pod = podBody(
    spec({ resume: true, llmSecret: null, models: false, limits: { memoryBytes: null, cpus: null } }),
  ) as Obj;
  assert.equal(pod.spec.initContainers[0].command[2], "keep");
  assert.equal(pod.spec.containers[0].resources, undefined);
  const names = pod.spec.containers[0].env.map((e: Obj) => e.name);
  assert.ok(names.includes("LVMH_RESUME"));
  assert.ok(!names.includes("ZAI_RENAUD_API_KEY"));
  assert.deepEqual(pod.spec.volumes.find((v: Obj) => v.name === "session").secret.items, [{
    key: "token",
    path: "token",
  }]);
});

Deno.test("secretBody() and claimBody(): immutable token Secret, RWO claim of the configured size and class", () => {
  const secret = secretBody(ID, { token: "agent.x.y", modelsJson: "{}" }) as Obj;
  assert.equal(secret.immutable, true);
  assert.deepEqual(secret.stringData, { token: "agent.x.y", "models.json": "{}" });
  assert.equal(secret.metadata.labels["app.kubernetes.io/component"], "session-secret");
  const claim = claimBody(ID, "g/p", { size: "10Gi", storageClass: null }) as Obj;
  assert.deepEqual(claim.spec, {
    accessModes: ["ReadWriteOnce"],
    resources: { requests: { storage: "10Gi" } },
  });
  assert.equal(
    (claimBody(ID, "g/p", { size: "1Gi", storageClass: "fast" }) as Obj).spec.storageClassName,
    "fast",
  );
});

Deno.test("quantities and the worker selector", () => {
  assert.equal(memoryQuantity(512 * 1024 ** 2), "512Mi");
  assert.equal(memoryQuantity(100), "1Mi");
  assert.equal(cpuQuantity(0.25), "250m");
  assert.equal(WORKER_SELECTOR, "app.kubernetes.io/managed-by=lvmh,app.kubernetes.io/component=worker");
});
