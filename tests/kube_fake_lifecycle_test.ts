/**
 * The fake Kubernetes API server (testing/fixtures/kube_api.ts) alone, the lives of its objects: a Pod's
 * graceful deletion (deletionTimestamp, exit 143, DELETED) and an unscheduled Pod's immediate one, owner
 * references collected or orphaned, an immutable Secret, and claim protection holding a PVC a Pod uses.
 */
import assert from "node:assert/strict";
import { pod, pvc, secret, waitUntil, withFake } from "../testing/fixtures/kube/with_fake.ts";

type Json = Record<string, unknown>;

Deno.test("kube fake: Pod delete — deletionTimestamp, exit 143, DELETED; unscheduled goes at once", () =>
  withFake(async (k, c) => {
    await c.call("POST", "~/pods", pod("run"));
    await c.call("POST", "~/pods", pod("queued"));
    k.setPodStatus("run", {
      phase: "Running",
      containerStatuses: [{
        name: "worker",
        ready: true,
        restartCount: 0,
        image: "busybox:1",
        imageID: "",
        state: { running: { startedAt: "2026-01-01T00:00:00Z" } },
      }],
    });
    assert.deepEqual(
      (k.get("pods", "run")!.spec as Json).nodeName,
      "fake-node",
      "reported containers mean bound",
    );
    const rv = (await c.call("GET", "~/pods")).body.metadata.resourceVersion;
    const w = await c.watch(`~/pods?watch=1&resourceVersion=${rv}`);
    const del = await c.call("DELETE", "~/pods/run", {
      kind: "DeleteOptions",
      apiVersion: "v1",
      gracePeriodSeconds: 10,
      propagationPolicy: "Background",
    });
    assert.deepEqual(del.status, 200);
    assert.deepEqual(del.body.kind, "Pod");
    assert.ok((del.body.metadata as Json).deletionTimestamp, "the answer is the Pod, now terminating");
    const e1 = await w.next();
    assert.deepEqual(e1?.type, "MODIFIED");
    assert.ok(e1?.object.metadata.deletionTimestamp);
    const e2 = await w.next();
    const st = e2?.object.status as Json;
    assert.deepEqual(st.phase, "Failed");
    assert.deepEqual(((st.containerStatuses as Json[])[0].state as Json).terminated, {
      ...(((st.containerStatuses as Json[])[0].state as Json).terminated as Json),
      exitCode: 143,
      reason: "Error",
    });
    assert.deepEqual((await w.next())?.type, "DELETED");

    const q = await c.call("DELETE", "~/pods/queued");
    assert.deepEqual(q.status, 200);
    const e4 = await w.next();
    assert.deepEqual(
      [e4?.type, e4?.object.metadata.name],
      ["DELETED", "queued"],
      "an unscheduled Pod goes at once",
    );
    const gone = await c.call("DELETE", "~/pods/queued");
    assert.deepEqual([gone.status, gone.body.reason], [404, "NotFound"]);
    await w.close();
  }));

Deno.test("kube fake: owner references are garbage-collected; Orphan keeps dependents; dangling owner", () =>
  withFake(async (k, c) => {
    const p = await c.call("POST", "~/pods", pod("owner"));
    const uid = (p.body.metadata as Json).uid;
    await c.call("POST", "~/secrets", secret("dep"));
    const owned = await c.call(
      "PATCH",
      "~/secrets/dep",
      { metadata: { ownerReferences: [{ apiVersion: "v1", kind: "Pod", name: "owner", uid }] } },
      "application/strategic-merge-patch+json",
    );
    assert.deepEqual(owned.status, 200);
    await c.call("POST", "~/secrets", {
      ...secret("dangling"),
      metadata: {
        name: "dangling",
        ownerReferences: [{ apiVersion: "v1", kind: "Pod", name: "owner", uid: "0000" }],
      },
    });
    await waitUntil(() => !k.get("secrets", "dangling"), "a dependent of a missing owner is collected");
    assert.ok(k.get("secrets", "dep"), "a dependent of a live owner stays");
    await c.call("DELETE", "~/pods/owner");
    await waitUntil(() => !k.get("secrets", "dep"), "the dependent goes with its owner");

    const p2 = await c.call("POST", "~/pods", pod("owner2"));
    await c.call("POST", "~/secrets", {
      ...secret("kept"),
      metadata: {
        name: "kept",
        ownerReferences: [{
          apiVersion: "v1",
          kind: "Pod",
          name: "owner2",
          uid: (p2.body.metadata as Json).uid,
        }],
      },
    });
    await c.call("DELETE", "~/pods/owner2?propagationPolicy=Orphan");
    await waitUntil(() => k.get("secrets", "kept")?.metadata.ownerReferences === undefined, "orphaned");
    assert.ok(k.get("secrets", "kept"));
  }));

Deno.test("kube fake: immutable Secret refuses data changes; claim protection holds a used PVC", () =>
  withFake(async (k, c) => {
    await c.call("POST", "~/secrets", secret("imm", { immutable: true }));
    const change = await c.call(
      "PATCH",
      "~/secrets/imm",
      { data: { token: btoa("other") } },
      "application/merge-patch+json",
    );
    assert.deepEqual(change.status, 422);
    assert.deepEqual(((change.body.details as Json).causes as Json[])[0].field, "data");
    const meta = await c.call(
      "PATCH",
      "~/secrets/imm",
      { metadata: { labels: { extra: "1" } } },
      "application/merge-patch+json",
    );
    assert.deepEqual(meta.status, 200, "metadata of an immutable Secret may change");

    await c.call("POST", "~/persistentvolumeclaims", pvc("ws"));
    await c.call("POST", "~/pods", {
      ...pod("user"),
      spec: {
        restartPolicy: "Never",
        containers: [{ name: "w", image: "busybox:1", volumeMounts: [{ name: "work", mountPath: "/w" }] }],
        volumes: [{ name: "work", persistentVolumeClaim: { claimName: "ws" } }],
      },
    });
    assert.deepEqual((k.get("persistentvolumeclaims", "ws")!.status as Json).phase, "Bound");
    const del = await c.call("DELETE", "~/persistentvolumeclaims/ws");
    assert.deepEqual(del.status, 200);
    assert.ok((del.body.metadata as Json).deletionTimestamp, "Terminating while a Pod uses it");
    assert.ok(k.get("persistentvolumeclaims", "ws"));
    await c.call("DELETE", "~/pods/user");
    await waitUntil(() => !k.get("persistentvolumeclaims", "ws"), "the claim goes once its Pod is gone");
    await c.call("POST", "~/secrets", secret("plain"));
    const plain = await c.call("DELETE", "~/secrets/plain");
    assert.deepEqual([plain.body.kind, plain.body.status], ["Status", "Success"]);
  }));
