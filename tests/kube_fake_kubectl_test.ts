/**
 * The fake Kubernetes API server (testing/fixtures/kube_api.ts) driven by this machine's real kubectl as a
 * second client, so the fake is held to what a real client accepts (error texts, list/watch, wait, logs,
 * patch, auth can-i, delete, the raw 410 watch line).
 */
import type { FakeKube, KubeObject } from "../testing/fixtures/kube_api.ts";
import assert from "node:assert/strict";
import { labels, pod, waitUntil, withFake } from "../testing/fixtures/kube/with_fake.ts";

// kubectl as a second client. kubectl's create fetches /openapi/v3 and /openapi/v2 to validate client-side; the
// fake serves neither (404), so creates pass --validate=false and the server's own validation applies.
async function kubectl(k: FakeKube, home: string, ...args: string[]) {
  const out = await new Deno.Command("kubectl", {
    args: ["--kubeconfig", k.kubeconfig, "--cache-dir", `${home}/cache`, ...args],
    env: { HOME: home, PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin" },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

Deno.test("kube fake: kubectl get/create/wait/logs/patch/auth can-i/delete and the raw 410 watch line", async () => {
  const home = await Deno.makeTempDir({ prefix: "lvmh-kubectl-" });
  try {
    await withFake(async (k, c) => {
      await c.call("POST", "~/pods", pod("lvmh-w-a"));
      await c.call("POST", "~/pods", {
        ...pod("stranger"),
        metadata: { name: "stranger", labels: { app: "x" } },
      });
      const got = await kubectl(
        k,
        home,
        "get",
        "pods",
        "-l",
        "app.kubernetes.io/managed-by=lvmh",
        "-o",
        "json",
      );
      assert.deepEqual(got.code, 0, got.stderr);
      const list = JSON.parse(got.stdout);
      assert.deepEqual(list.items.map((i: KubeObject) => i.metadata.name), ["lvmh-w-a"]);
      assert.deepEqual(list.items[0].status.phase, "Pending");

      const file = `${home}/pod.json`;
      await Deno.writeTextFile(file, JSON.stringify(pod("lvmh-w-b")));
      const created = await kubectl(k, home, "create", "-f", file, "--validate=false");
      assert.deepEqual(created.code, 0, created.stderr);
      assert.match(created.stdout, /pod\/lvmh-w-b created/);
      const create = k.requests.find((r) => r.method === "POST" && r.url.includes("/pods?"));
      assert.match(create!.url, /fieldManager=kubectl-create/);
      const dup = await kubectl(k, home, "create", "-f", file, "--validate=false");
      assert.notDeepEqual(dup.code, 0);
      assert.match(dup.stderr, /Error from server \(AlreadyExists\).*pods "lvmh-w-b" already exists/);

      const nope = await kubectl(k, home, "get", "pod", "nope");
      assert.notDeepEqual(nope.code, 0);
      assert.match(nope.stderr, /Error from server \(NotFound\): pods "nope" not found/);

      const waiting = kubectl(
        k,
        home,
        "wait",
        "--for=jsonpath={.status.phase}=Running",
        "pod/lvmh-w-b",
        "--timeout=30s",
      );
      await waitUntil(() => k.openWatches > 0, "kubectl wait watches");
      k.setPodStatus("lvmh-w-b", { phase: "Running" });
      const waited = await waiting;
      assert.deepEqual(waited.code, 0, waited.stderr);
      assert.match(waited.stdout, /pod\/lvmh-w-b condition met/);

      const raw = await kubectl(
        k,
        home,
        "get",
        "--raw",
        "/api/v1/namespaces/x/pods?watch=1&resourceVersion=1",
      );
      assert.deepEqual(raw.code, 0, raw.stderr);
      const line = JSON.parse(raw.stdout.trim().split("\n")[0]);
      assert.deepEqual([line.type, line.object.code, line.object.reason], ["ERROR", 410, "Expired"]);

      k.setLogs("lvmh-w-b", "one\ntwo\n");
      const logs = await kubectl(k, home, "logs", "lvmh-w-b", "-c", "worker", "--tail=1");
      assert.deepEqual([logs.code, logs.stdout], [0, "two\n"], logs.stderr);

      const patched = await kubectl(
        k,
        home,
        "patch",
        "pod",
        "lvmh-w-b",
        "--type=merge",
        "-p",
        '{"metadata":{"labels":{"x":"y"}}}',
      );
      assert.deepEqual(patched.code, 0, patched.stderr);
      assert.deepEqual(k.get("pods", "lvmh-w-b")?.metadata.labels, { ...labels, x: "y" });

      k.deny("delete", "persistentvolumeclaims");
      const canI = await kubectl(k, home, "auth", "can-i", "delete", "persistentvolumeclaims");
      assert.deepEqual([canI.code, canI.stdout.trim()], [1, "no"]);
      const canGet = await kubectl(k, home, "auth", "can-i", "get", "pods");
      assert.deepEqual([canGet.code, canGet.stdout.trim()], [0, "yes"]);

      const del = await kubectl(k, home, "delete", "pod", "lvmh-w-b", "--timeout=30s");
      assert.deepEqual(del.code, 0, del.stderr);
      assert.match(del.stdout, /pod "lvmh-w-b" deleted/);
      assert.deepEqual(k.get("pods", "lvmh-w-b"), undefined);
    });
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});
