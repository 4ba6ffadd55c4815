import assert from "node:assert/strict";
import { resolveKube } from "./settings.ts";
import { statusError } from "./client.ts";
import { ConflictError, InvalidError, NotFoundError, UnavailableError, UpstreamError } from "../errors.ts";
import { accessReviewBody } from "./preflight.ts";
import { ConfigError, loadConfig } from "../config.ts";

const vars = { storageSize: "10Gi", startTimeoutSeconds: 300 };

Deno.test("resolveKube(): variables outside, the service account inside, else the variable to set", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-kube-sa-" });
  try {
    assert.match(resolveKube(vars, {}, dir) as string, /^LVMH_KUBE_URL: /);
    const outside = resolveKube({ ...vars, url: "https://10.0.0.1:6443/" }, {}, dir);
    assert.deepEqual(outside, {
      connection: { url: "https://10.0.0.1:6443", namespace: "lvmh", tokenFile: null, caFile: null },
      storageClass: null,
      storageSize: "10Gi",
      llmSecret: null,
      startTimeoutMs: 300_000,
    });
    assert.match(
      resolveKube({ ...vars, url: "https://x", caFile: `${dir}/nope.crt` }, {}, dir) as string,
      /^LVMH_KUBE_CA_FILE: cannot read/,
    );
    await Deno.writeTextFile(`${dir}/token`, "t");
    await Deno.writeTextFile(`${dir}/ca.crt`, "c");
    await Deno.writeTextFile(`${dir}/namespace`, "team-a\n");
    const inside = resolveKube(
      vars,
      { KUBERNETES_SERVICE_HOST: "10.96.0.1", KUBERNETES_SERVICE_PORT: "443" },
      dir,
    );
    assert.deepEqual(typeof inside === "string" ? inside : inside.connection, {
      url: "https://10.96.0.1:443",
      namespace: "team-a",
      tokenFile: `${dir}/token`,
      caFile: `${dir}/ca.crt`,
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("statusError(): Status codes become the domain kinds, with code and reason kept", () => {
  const of = (code: number, reason = "") =>
    statusError(code, { kind: "Status", code, reason, message: "m" }, "f");
  assert.ok(of(404, "NotFound") instanceof NotFoundError);
  assert.ok(of(409, "AlreadyExists") instanceof ConflictError);
  assert.ok(of(422, "Invalid") instanceof InvalidError);
  assert.ok(of(401) instanceof UnavailableError);
  assert.ok(of(403, "Forbidden") instanceof UpstreamError);
  assert.ok(of(503) instanceof UpstreamError);
  assert.equal(of(409, "AlreadyExists").reason, "AlreadyExists");
  const causes = statusError(422, {
    details: { causes: [{ field: "metadata.name", message: "Required value" }] },
  }, "bad");
  assert.equal(causes.message, "bad (metadata.name: Required value)");
});

Deno.test("accessReviewBody(): a subresource is split off its resource", () => {
  assert.deepEqual(accessReviewBody("ns", "get", "pods/log"), {
    apiVersion: "authorization.k8s.io/v1",
    kind: "SelfSubjectAccessReview",
    spec: { resourceAttributes: { namespace: "ns", verb: "get", resource: "pods", subresource: "log" } },
  });
});

Deno.test("loadConfig(): the Kubernetes variables, each refused by name", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-kube-config-" });
  try {
    const base = { LVMH_TOKEN: "test-token-0123456789abcdef", LVMH_DATA_DIR: dir };
    assert.equal(loadConfig(base).spawnBackend, "docker");
    assert.equal(loadConfig(base).kube, null);
    const digest = "registry.example/lvmh-worker@sha256:" + "0".repeat(64);
    assert.equal(loadConfig({ ...base, LVMH_WORKER_IMAGE: digest }).workerImage, digest);
    const kube = loadConfig({
      ...base,
      LVMH_SPAWN_BACKEND: "kubernetes",
      LVMH_KUBE_URL: "https://127.0.0.1:6443",
      LVMH_KUBE_NAMESPACE: "team-a",
      LVMH_KUBE_START_TIMEOUT: "30",
    }).kube;
    assert.equal(kube?.connection.namespace, "team-a");
    assert.equal(kube?.startTimeoutMs, 30_000);
    assert.equal(kube?.storageSize, "10Gi");
    const k8s = { ...base, LVMH_SPAWN_BACKEND: "kubernetes", LVMH_KUBE_URL: "https://127.0.0.1:6443" };
    for (
      const [name, value] of [
        ["LVMH_SPAWN_BACKEND", "nomad"],
        ["LVMH_KUBE_URL", "ftp://x"],
        ["LVMH_KUBE_NAMESPACE", "Team_A"],
        ["LVMH_KUBE_STORAGE_SIZE", "10GB"],
        ["LVMH_KUBE_START_TIMEOUT", "-1"],
        ["LVMH_KUBE_LLM_SECRET", "has space"],
        ["LVMH_KUBE_TOKEN_FILE", "/nonexistent/token"],
        ["LVMH_WORKER_IMAGE", "x@sha256:short"],
      ]
    ) {
      assert.throws(
        () => loadConfig({ ...k8s, [name]: value }),
        (e) => e instanceof ConfigError && e.message.startsWith(`${name}: `),
        name,
      );
    }
    // Outside a cluster without a URL: the variable to set is named.
    assert.throws(
      () => loadConfig({ ...base, LVMH_SPAWN_BACKEND: "kubernetes" }),
      (e) => e instanceof ConfigError && e.message.startsWith("LVMH_KUBE_URL: "),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
