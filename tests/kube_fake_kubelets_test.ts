/**
 * The fake Kubernetes API server's kubelets (testing/fixtures/kubelet.ts) seen through the API: pods/log with
 * its container and tailLines, the script kubelet's Pod steps with the kubelet's reasons, and the Docker
 * kubelet's quantities and `$(VAR)` expansion (its runs on a real engine: tests/e2e/kubelet_docker_test.ts).
 */
import { expand } from "../testing/fixtures/kube/container_env.ts";
import { memoryBytes, nanoCpus } from "../testing/fixtures/kube/container_config.ts";
import assert from "node:assert/strict";
import { podWithInit, withFake } from "../testing/fixtures/kube/with_fake.ts";

type Json = Record<string, unknown>;

Deno.test("kube fake: pods/log with container and tailLines", () =>
  withFake(async (k, c) => {
    await c.call("POST", "~/pods", podWithInit("logs"));
    const waiting = await c.call("GET", "~/pods/logs/log?container=worker");
    assert.deepEqual(waiting.status, 400);
    assert.match(String(waiting.body.message), /container "worker" in pod "logs" is waiting to start/);
    const only = await c.call("GET", "~/pods/logs/log");
    assert.match(
      String(only.body.message),
      /container "worker" in pod "logs" is waiting/,
      "the only container is the default",
    );
    k.setLogs("logs", "cloning\nfatal: repository not found\n", "clone");
    const http = Deno.createHttpClient({ caCerts: [await Deno.readTextFile(k.caFile)] });
    try {
      const res = await fetch(`${k.url}/api/v1/namespaces/lvmh/pods/logs/log?container=clone&tailLines=1`, {
        client: http,
        headers: { authorization: `Bearer ${c.token}` },
      });
      assert.deepEqual([res.status, await res.text()], [200, "fatal: repository not found\n"]);
    } finally {
      http.close();
    }
  }));

Deno.test("kube fake: scripted Pod steps carry the kubelet's reasons and bind the Pod", () =>
  withFake(async (k, c) => {
    await c.call("POST", "~/pods", podWithInit("steps"));
    const rv = (await c.call("GET", "~/pods")).body.metadata.resourceVersion;
    const w = await c.watch(`~/pods?watch=1&resourceVersion=${rv}`);
    k.scriptPod("steps", "unschedulable", { message: "0/3 nodes are available: 3 Insufficient cpu." });
    let e = await w.next();
    const sched = ((e!.object.status as Json).conditions as Json[])[0];
    assert.deepEqual([sched.type, sched.status, sched.reason, sched.message], [
      "PodScheduled",
      "False",
      "Unschedulable",
      "0/3 nodes are available: 3 Insufficient cpu.",
    ]);
    assert.deepEqual((e!.object.spec as Json).nodeName, undefined, "not bound while unschedulable");
    k.scriptPod("steps", "initRunning");
    e = await w.next();
    assert.deepEqual((e!.object.spec as Json).nodeName, "fake-node");
    const init = ((e!.object.status as Json).initContainerStatuses as Json[])[0];
    assert.ok((init.state as Json).running);
    k.scriptPod("steps", "initFailed", { message: "fatal: repository 'x' not found" });
    e = await w.next();
    const st = e!.object.status as Json;
    assert.deepEqual(st.phase, "Failed");
    const term = ((st.initContainerStatuses as Json[])[0].state as Json).terminated as Json;
    assert.deepEqual([term.exitCode, term.message], [1, "fatal: repository 'x' not found"]);
    k.scriptPod("steps", "evicted");
    e = await w.next();
    assert.deepEqual([(e!.object.status as Json).phase, (e!.object.status as Json).reason], [
      "Failed",
      "Evicted",
    ]);
    k.scriptPod("steps", "oomKilled");
    e = await w.next();
    const s2 = e!.object.status as Json;
    assert.deepEqual(s2.reason, undefined, "a later step clears the eviction reason");
    const worker = ((s2.containerStatuses as Json[])[0].state as Json).terminated as Json;
    assert.deepEqual([worker.reason, worker.exitCode], ["OOMKilled", 137]);
    k.scriptPod("steps", "imagePull", { reason: "ErrImagePull" });
    e = await w.next();
    const waiting = (((e!.object.status as Json).containerStatuses as Json[])[0].state as Json)
      .waiting as Json;
    assert.deepEqual(waiting.reason, "ErrImagePull");
    await w.close();
  }));

Deno.test("kube fake: the Docker kubelet's quantities and $(VAR) expansion", () => {
  assert.deepEqual(memoryBytes("256Mi"), 256 * 1024 * 1024);
  assert.deepEqual(memoryBytes("1G"), 1e9);
  assert.deepEqual(memoryBytes("1024"), 1024);
  assert.deepEqual(nanoCpus("500m"), 5e8);
  assert.deepEqual(nanoCpus("2"), 2e9);
  const env = new Map([["A", "x"], ["B", "y"]]);
  assert.deepEqual(expand("$(A)-$(B)-$(C)-$$(A)", env), "x-y-$(C)-$(A)");
});
