/**
 * The fake Kubernetes API server (testing/fixtures/kube_api.ts) alone: the API conventions the Kubernetes
 * backend relies on, and the same fake driven by this machine's real kubectl as a second client, so the fake
 * is held to what a real client accepts (error texts, list/watch, wait, delete).
 */
import nodeAssert from "node:assert/strict";
import { type FakeKube, type KubeObject, startFakeKube } from "../testing/fixtures/kube_api.ts";
import { kubeClient as client } from "../testing/fixtures/kube/client.ts";
import { expand } from "../testing/fixtures/kube/container_env.ts";
import { memoryBytes, nanoCpus } from "../testing/fixtures/kube/container_config.ts";

type Json = Record<string, unknown>;

const assert: (v: unknown, msg?: string) => asserts v = nodeAssert.ok;
const assertEquals = (a: unknown, b: unknown, msg?: string) => nodeAssert.deepEqual(a, b, msg);
const assertNotEquals = (a: unknown, b: unknown, msg?: string) => nodeAssert.notDeepEqual(a, b, msg);
const assertMatch = (s: string, re: RegExp, msg?: string) => nodeAssert.match(s, re, msg);
const labels = { "app.kubernetes.io/managed-by": "lvmh", "lvmh.dev/session": "s1" };
const pod = (name: string, extra: Json = {}) => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name, labels },
  spec: { restartPolicy: "Never", containers: [{ name: "worker", image: "busybox:1" }] },
  ...extra,
});
const secret = (name: string, extra: Json = {}) => ({
  apiVersion: "v1",
  kind: "Secret",
  metadata: { name, labels },
  type: "Opaque",
  stringData: { token: "t0k" },
  ...extra,
});
const pvc = (name: string) => ({
  apiVersion: "v1",
  kind: "PersistentVolumeClaim",
  metadata: { name, labels },
  spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
});

/** Run `fn` with a fresh fake and client, closing both. */
async function withFake(
  fn: (k: FakeKube, c: Awaited<ReturnType<typeof client>>) => Promise<void>,
  o: Parameters<typeof startFakeKube>[0] = {},
) {
  const k = await startFakeKube(o);
  const c = await client(k);
  try {
    await fn(k, c);
  } finally {
    c.close();
    await k.close();
  }
}

Deno.test("kube fake: create, get, 409/404/422 Status objects, one resourceVersion counter", () =>
  withFake(async (k, c) => {
    const s = await c.call("POST", "~/secrets", secret("lvmh-s-1"));
    assertEquals(s.status, 201);
    const meta = s.body.metadata as Json;
    assertMatch(String(meta.uid), /^[0-9a-f-]{36}$/);
    assertMatch(String(meta.creationTimestamp), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assertEquals(s.body.data, { token: btoa("t0k") }, "stringData is folded into base64 data");
    assertEquals(s.body.stringData, undefined);

    const again = await c.call("POST", "~/secrets", secret("lvmh-s-1"));
    assertEquals(again.status, 409);
    assertEquals(again.body.kind, "Status");
    assertEquals(again.body.reason, "AlreadyExists");
    assertEquals(again.body.message, 'secrets "lvmh-s-1" already exists');

    const missing = await c.call("GET", "~/pods/nope");
    assertEquals([missing.status, missing.body.reason, missing.body.message], [
      404,
      "NotFound",
      'pods "nope" not found',
    ]);

    const p = await c.call("POST", "~/pods", pod("lvmh-w-1"));
    assertEquals(p.status, 201);
    assertEquals((p.body.status as Json).phase, "Pending");
    const rv1 = Number(meta.resourceVersion);
    const rv2 = Number((p.body.metadata as Json).resourceVersion);
    assert(rv2 > rv1, "one counter across kinds");
    const v = await c.call("POST", "~/persistentvolumeclaims", pvc("lvmh-ws-1"));
    assert(Number((v.body.metadata as Json).resourceVersion) > rv2);
    assertEquals(k.list("pods").map((o) => o.metadata.name), ["lvmh-w-1"]);

    const patched = await c.call(
      "PATCH",
      "~/pods/lvmh-w-1",
      { metadata: { annotations: { "lvmh.dev/repo": "group/sub/project" } } },
      "application/merge-patch+json",
    );
    assertEquals(patched.status, 200);
    assert(Number((patched.body.metadata as Json).resourceVersion) > rv2, "a patch bumps the version");
    const same = await c.call(
      "PATCH",
      "~/pods/lvmh-w-1",
      { metadata: { annotations: { "lvmh.dev/repo": "group/sub/project" } } },
      "application/merge-patch+json",
    );
    assertEquals(
      (same.body.metadata as Json).resourceVersion,
      (patched.body.metadata as Json).resourceVersion,
      "a no-op write keeps it",
    );
  }));

Deno.test("kube fake: 422 Invalid with details.causes for names and labels", () =>
  withFake(async (_k, c) => {
    const noName = await c.call("POST", "~/secrets", { ...secret(""), metadata: { labels } });
    assertEquals(noName.status, 422);
    assertEquals(noName.body.reason, "Invalid");
    const causes = (noName.body.details as Json).causes as Json[];
    assertEquals(causes[0].field, "metadata.name");
    assertEquals(causes[0].reason, "FieldValueRequired");

    const badName = await c.call("POST", "~/pods", pod("Bad_Name"));
    assertEquals(badName.status, 422);
    assertMatch(
      String(badName.body.message),
      /^Pod "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain/,
    );

    const slash = await c.call(
      "POST",
      "~/pods",
      pod("x", { metadata: { name: "x", labels: { "lvmh.dev/repo": "group/sub" } } }),
    );
    assertEquals(slash.status, 422);
    assertEquals(((slash.body.details as Json).causes as Json[])[0].field, "metadata.labels");
    assertMatch(
      String(slash.body.message),
      /Invalid value: "group\/sub": a valid label must be an empty string/,
    );

    const long = await c.call(
      "POST",
      "~/pods",
      pod("y", { metadata: { name: "y", labels: { a: "x".repeat(64) } } }),
    );
    assertEquals(long.status, 422);
    assertMatch(String(long.body.message), /must be no more than 63 characters/);

    const noContainers = await c.call("POST", "~/pods", {
      metadata: { name: "z" },
      spec: { containers: [] },
    });
    assertEquals(noContainers.status, 422);
    assertEquals(((noContainers.body.details as Json).causes as Json[])[0].field, "spec.containers");
  }));

Deno.test("kube fake: label and field selectors, limit with continue", () =>
  withFake(async (_k, c) => {
    const mk = (name: string, l: Record<string, string>) =>
      c.call("POST", "~/secrets", { metadata: { name, labels: l }, stringData: { a: "b" } });
    await mk("a", { app: "lvmh", tier: "w" });
    await mk("b", { app: "lvmh", tier: "s" });
    await mk("c", { app: "other" });
    await mk("d", {});
    const names = async (q: string) =>
      (await c.call("GET", `~/secrets?${q}`)).body.items.map((i) => (i.metadata as Json).name).join(",");
    assertEquals(await names("labelSelector=" + encodeURIComponent("app=lvmh")), "a,b");
    assertEquals(await names("labelSelector=" + encodeURIComponent("app==lvmh,tier=s")), "b");
    assertEquals(await names("labelSelector=" + encodeURIComponent("app!=lvmh")), "c,d");
    assertEquals(await names("labelSelector=" + encodeURIComponent("tier in (w,x)")), "a");
    assertEquals(await names("labelSelector=" + encodeURIComponent("app notin (lvmh)")), "c,d");
    assertEquals(await names("labelSelector=app"), "a,b,c");
    assertEquals(await names("labelSelector=" + encodeURIComponent("!app")), "d");
    assertEquals(await names("fieldSelector=" + encodeURIComponent("metadata.name=c")), "c");
    const bad = await c.call("GET", "~/secrets?fieldSelector=spec.bogus%3Dx");
    assertEquals([bad.status, bad.body.message], [400, "field label not supported: spec.bogus"]);
    const page = await c.call("GET", "~/secrets?limit=3");
    assertEquals(page.body.items.length, 3);
    assertEquals(page.body.kind, "SecretList");
    assertEquals(page.body.items[0].kind, undefined, "list items carry no kind");
    const meta = page.body.metadata as Json;
    assertEquals(meta.remainingItemCount, 1);
    const rest = await c.call(
      "GET",
      `~/secrets?limit=3&continue=${encodeURIComponent(String(meta.continue))}`,
    );
    assertEquals(rest.body.items.map((i) => (i.metadata as Json).name), ["d"]);
  }));

Deno.test("kube fake: watch from a list's version, resume, selector, BOOKMARK, timeoutSeconds", () =>
  withFake(async (k, c) => {
    await c.call("POST", "~/pods", pod("before"));
    const list = await c.call("GET", "~/pods?labelSelector=" + encodeURIComponent("lvmh.dev/session=s1"));
    const rv = String((list.body.metadata as Json).resourceVersion);
    const w = await c.watch(
      `~/pods?watch=1&resourceVersion=${rv}&allowWatchBookmarks=true&labelSelector=` +
        encodeURIComponent("lvmh.dev/session=s1"),
    );
    assertEquals(w.status, 200);
    await c.call("POST", "~/pods", pod("p1"));
    await c.call("POST", "~/pods", { ...pod("other"), metadata: { name: "other", labels: { x: "y" } } });
    k.setPodStatus("p1", { phase: "Running" });
    const added = await w.next();
    assertEquals([added?.type, added?.object.metadata.name, added?.object.kind], ["ADDED", "p1", "Pod"]);
    const modified = await w.next();
    assertEquals([modified?.type, (modified?.object.status as Json).phase], ["MODIFIED", "Running"]);
    const addedRv = String(added!.object.metadata.resourceVersion);
    let e = await w.next(3000);
    while (e?.type !== "BOOKMARK") e = await w.next(3000);
    assertEquals(Object.keys(e.object.metadata), ["resourceVersion"]);
    assertEquals(e.object.metadata.resourceVersion, k.resourceVersion);
    await w.close();

    const resumed = await c.watch(`~/pods?watch=true&resourceVersion=${addedRv}&timeoutSeconds=1`);
    const r1 = await resumed.next();
    assertEquals(
      [r1?.type, r1?.object.metadata.name],
      ["ADDED", "other"],
      "resume replays only later events",
    );
    const r2 = await resumed.next();
    assertEquals([r2?.type, r2?.object.metadata.name], ["MODIFIED", "p1"]);
    assertEquals(await resumed.next(3000), null, "timeoutSeconds ends the stream cleanly");

    const fresh = await c.watch("~/pods?watch=1&fieldSelector=metadata.name%3Dp1");
    const f1 = await fresh.next();
    assertEquals([f1?.type, f1?.object.metadata.name], ["ADDED", "p1"], "no version: current state as ADDED");
    await fresh.close();
  }, { bookmarkMs: 50 }));

Deno.test("kube fake: 410 as an ERROR event, as a bare 410, and a dropped stream", () =>
  withFake(async (k, c) => {
    const first = await c.call("POST", "~/secrets", secret("s0"));
    const oldRv = String((first.body.metadata as Json).resourceVersion);
    for (let i = 1; i <= 4; i++) await c.call("POST", "~/secrets", secret(`s${i}`));
    const tooOld = await c.watch(`~/secrets?watch=1&resourceVersion=${oldRv}`);
    assertEquals(tooOld.status, 200);
    const err = await tooOld.next();
    assertEquals(err?.type, "ERROR");
    assertEquals([err?.object.kind, err?.object.code, err?.object.reason], ["Status", 410, "Expired"]);
    assertEquals(await tooOld.next(), null);

    // An open watch broken with an ERROR event; resuming from its version is then too old too.
    let rv = String((await c.call("GET", "~/secrets")).body.metadata.resourceVersion);
    const open = await c.watch(`~/secrets?watch=1&resourceVersion=${rv}`);
    await waitForWatches(k, 1);
    k.breakWatches("event");
    const broken = await open.next();
    assertEquals([broken?.type, broken?.object.code], ["ERROR", 410]);
    assertEquals(await open.next(), null);
    const stale = await c.watch(`~/secrets?watch=1&resourceVersion=${rv}`);
    assertEquals((await stale.next())?.object.code, 410);

    // Bare: the stream ends, then a watch from an old version is an HTTP 410; a relist's version works.
    rv = String((await c.call("GET", "~/secrets")).body.metadata.resourceVersion);
    const open2 = await c.watch(`~/secrets?watch=1&resourceVersion=${rv}`);
    await waitForWatches(k, 1);
    k.breakWatches("bare");
    assertEquals(await open2.next(), null);
    const bare = await c.call("GET", `~/secrets?watch=1&resourceVersion=${rv}`);
    assertEquals([bare.status, bare.body.kind, bare.body.reason], [410, "Status", "Gone"]);
    const relist = String((await c.call("GET", "~/secrets")).body.metadata.resourceVersion);
    assertNotEquals(relist, rv);
    const ok = await c.watch(`~/secrets?watch=1&resourceVersion=${relist}`);
    await c.call("DELETE", "~/secrets/s1");
    assertEquals((await ok.next())?.type, "DELETED");

    // Drop: the stream is cut without an event; resuming from the last version still works.
    k.breakWatches("drop");
    let cut = false;
    try {
      await ok.next();
    } catch {
      cut = true;
    }
    assert(cut, "a dropped stream is an error for the reader, not a clean end");
    const again = await c.watch(`~/secrets?watch=1&resourceVersion=${relist}`);
    assertEquals((await again.next())?.type, "DELETED");
    await again.close();
  }, { watchHistory: 3 }));

async function waitForWatches(k: FakeKube, n: number) {
  const end = Date.now() + 5000;
  while (k.openWatches < n) {
    if (Date.now() > end) throw new Error(`expected ${n} open watches, have ${k.openWatches}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

Deno.test("kube fake: dryRun=All persists nothing; fieldValidation Strict, Warn and Ignore", () =>
  withFake(async (k, c) => {
    const rv = k.resourceVersion;
    const dry = await c.call("POST", "~/pods?dryRun=All", pod("dry"));
    assertEquals(dry.status, 201);
    assertEquals((dry.body.metadata as Json).name, "dry");
    assertEquals(k.list("pods"), []);
    assertEquals(k.resourceVersion, rv);
    const dryBad = await c.call("POST", "~/pods?dryRun=All", pod("Bad"));
    assertEquals(dryBad.status, 422, "dry run still validates");

    const bogus = pod("strict");
    (bogus.spec.containers[0] as Json).imagePulPolicy = "Always";
    (bogus.spec as Json).securityContext = { runAsNonRoot: true, fsGroupp: 1 };
    const strict = await c.call("POST", "~/pods?fieldValidation=Strict", bogus);
    assertEquals(strict.status, 400);
    assertEquals(strict.body.reason, "BadRequest");
    assertMatch(
      String(strict.body.message),
      /strict decoding error: .*unknown field "spec.containers\[0\].imagePulPolicy"/,
    );
    assertMatch(String(strict.body.message), /unknown field "spec.securityContext.fsGroupp"/);
    const typed = await c.call("POST", "~/pods?fieldValidation=Strict", {
      ...pod("typed"),
      spec: { containers: [{ name: "w", image: 5 }] },
    });
    assertEquals(typed.status, 400, "a wrong type is refused in every mode");

    const warn = await c.call("POST", "~/pods", bogus);
    assertEquals(warn.status, 201);
    assertMatch(warn.headers.get("warning") ?? "", /unknown field \\"spec.containers\[0\].imagePulPolicy\\"/);
    const stored = k.list("pods")[0];
    assertEquals(
      ((stored.spec as Json).containers as Json[])[0].imagePulPolicy,
      undefined,
      "dropped on decode",
    );
    const ignore = await c.call("POST", "~/pods?fieldValidation=Ignore", {
      ...bogus,
      metadata: { name: "ign" },
    });
    assertEquals([ignore.status, ignore.headers.get("warning")], [201, null]);
  }));

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
    assertEquals(
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
    assertEquals(del.status, 200);
    assertEquals(del.body.kind, "Pod");
    assert((del.body.metadata as Json).deletionTimestamp, "the answer is the Pod, now terminating");
    const e1 = await w.next();
    assertEquals(e1?.type, "MODIFIED");
    assert(e1?.object.metadata.deletionTimestamp);
    const e2 = await w.next();
    const st = e2?.object.status as Json;
    assertEquals(st.phase, "Failed");
    assertEquals(((st.containerStatuses as Json[])[0].state as Json).terminated, {
      ...(((st.containerStatuses as Json[])[0].state as Json).terminated as Json),
      exitCode: 143,
      reason: "Error",
    });
    assertEquals((await w.next())?.type, "DELETED");

    const q = await c.call("DELETE", "~/pods/queued");
    assertEquals(q.status, 200);
    const e4 = await w.next();
    assertEquals(
      [e4?.type, e4?.object.metadata.name],
      ["DELETED", "queued"],
      "an unscheduled Pod goes at once",
    );
    const gone = await c.call("DELETE", "~/pods/queued");
    assertEquals([gone.status, gone.body.reason], [404, "NotFound"]);
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
    assertEquals(owned.status, 200);
    await c.call("POST", "~/secrets", {
      ...secret("dangling"),
      metadata: {
        name: "dangling",
        ownerReferences: [{ apiVersion: "v1", kind: "Pod", name: "owner", uid: "0000" }],
      },
    });
    await waitUntil(() => !k.get("secrets", "dangling"), "a dependent of a missing owner is collected");
    assert(k.get("secrets", "dep"), "a dependent of a live owner stays");
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
    assert(k.get("secrets", "kept"));
  }));

async function waitUntil(check: () => unknown, what: string) {
  const end = Date.now() + 5000;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

Deno.test("kube fake: immutable Secret refuses data changes; claim protection holds a used PVC", () =>
  withFake(async (k, c) => {
    await c.call("POST", "~/secrets", secret("imm", { immutable: true }));
    const change = await c.call(
      "PATCH",
      "~/secrets/imm",
      { data: { token: btoa("other") } },
      "application/merge-patch+json",
    );
    assertEquals(change.status, 422);
    assertEquals(((change.body.details as Json).causes as Json[])[0].field, "data");
    const meta = await c.call(
      "PATCH",
      "~/secrets/imm",
      { metadata: { labels: { extra: "1" } } },
      "application/merge-patch+json",
    );
    assertEquals(meta.status, 200, "metadata of an immutable Secret may change");

    await c.call("POST", "~/persistentvolumeclaims", pvc("ws"));
    await c.call("POST", "~/pods", {
      ...pod("user"),
      spec: {
        restartPolicy: "Never",
        containers: [{ name: "w", image: "busybox:1", volumeMounts: [{ name: "work", mountPath: "/w" }] }],
        volumes: [{ name: "work", persistentVolumeClaim: { claimName: "ws" } }],
      },
    });
    assertEquals((k.get("persistentvolumeclaims", "ws")!.status as Json).phase, "Bound");
    const del = await c.call("DELETE", "~/persistentvolumeclaims/ws");
    assertEquals(del.status, 200);
    assert((del.body.metadata as Json).deletionTimestamp, "Terminating while a Pod uses it");
    assert(k.get("persistentvolumeclaims", "ws"));
    await c.call("DELETE", "~/pods/user");
    await waitUntil(() => !k.get("persistentvolumeclaims", "ws"), "the claim goes once its Pod is gone");
    await c.call("POST", "~/secrets", secret("plain"));
    const plain = await c.call("DELETE", "~/secrets/plain");
    assertEquals([plain.body.kind, plain.body.status], ["Status", "Success"]);
  }));

Deno.test("kube fake: 401 without the token, SelfSubjectAccessReview and 403 after deny", () =>
  withFake(async (k, c) => {
    const http = Deno.createHttpClient({ caCerts: [await Deno.readTextFile(k.caFile)] });
    try {
      const res = await fetch(`${k.url}/api/v1/namespaces/lvmh/pods`, { client: http });
      const body = await res.json();
      assertEquals([res.status, body.kind, body.reason], [401, "Status", "Unauthorized"]);
      const wrong = await fetch(`${k.url}/api/v1/namespaces/lvmh/pods`, {
        client: http,
        headers: { authorization: "Bearer nope" },
      });
      assertEquals(wrong.status, 401);
      await wrong.body?.cancel();
    } finally {
      http.close();
    }
    const ssar = (verb: string, resource: string, subresource = "") =>
      c.call("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {
        apiVersion: "authorization.k8s.io/v1",
        kind: "SelfSubjectAccessReview",
        spec: { resourceAttributes: { namespace: "lvmh", verb, resource, subresource, group: "" } },
      });
    const before = await ssar("delete", "persistentvolumeclaims");
    assertEquals([before.status, (before.body.status as Json).allowed], [201, true]);
    k.deny("delete", "persistentvolumeclaims");
    k.deny("get", "pods/log");
    assertEquals(((await ssar("delete", "persistentvolumeclaims")).body.status as Json).allowed, false);
    assertEquals(((await ssar("get", "pods", "log")).body.status as Json).allowed, false);
    assertEquals(((await ssar("get", "pods")).body.status as Json).allowed, true);
    await c.call("POST", "~/persistentvolumeclaims", pvc("ws"));
    const del = await c.call("DELETE", "~/persistentvolumeclaims/ws");
    assertEquals([del.status, del.body.reason], [403, "Forbidden"]);
    assertEquals(
      del.body.message,
      `persistentvolumeclaims "ws" is forbidden: User "${k.user}" cannot delete resource "persistentvolumeclaims" in API group "" in the namespace "lvmh"`,
    );
    assert(!JSON.stringify(k.requests).includes(c.token), "the token is redacted from the request log");
    assertEquals(k.requests.at(-1)?.headers.authorization, "Bearer <redacted>");
  }));

Deno.test("kube fake: pods/log with container and tailLines", () =>
  withFake(async (k, c) => {
    await c.call("POST", "~/pods", {
      ...pod("logs"),
      spec: {
        restartPolicy: "Never",
        initContainers: [{ name: "clone", image: "busybox:1" }],
        containers: [{ name: "worker", image: "busybox:1" }],
      },
    });
    const waiting = await c.call("GET", "~/pods/logs/log?container=worker");
    assertEquals(waiting.status, 400);
    assertMatch(String(waiting.body.message), /container "worker" in pod "logs" is waiting to start/);
    const only = await c.call("GET", "~/pods/logs/log");
    assertMatch(
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
      assertEquals([res.status, await res.text()], [200, "fatal: repository not found\n"]);
    } finally {
      http.close();
    }
  }));

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
      assertEquals(got.code, 0, got.stderr);
      const list = JSON.parse(got.stdout);
      assertEquals(list.items.map((i: KubeObject) => i.metadata.name), ["lvmh-w-a"]);
      assertEquals(list.items[0].status.phase, "Pending");

      const file = `${home}/pod.json`;
      await Deno.writeTextFile(file, JSON.stringify(pod("lvmh-w-b")));
      const created = await kubectl(k, home, "create", "-f", file, "--validate=false");
      assertEquals(created.code, 0, created.stderr);
      assertMatch(created.stdout, /pod\/lvmh-w-b created/);
      const create = k.requests.find((r) => r.method === "POST" && r.url.includes("/pods?"));
      assertMatch(create!.url, /fieldManager=kubectl-create/);
      const dup = await kubectl(k, home, "create", "-f", file, "--validate=false");
      assertNotEquals(dup.code, 0);
      assertMatch(dup.stderr, /Error from server \(AlreadyExists\).*pods "lvmh-w-b" already exists/);

      const nope = await kubectl(k, home, "get", "pod", "nope");
      assertNotEquals(nope.code, 0);
      assertMatch(nope.stderr, /Error from server \(NotFound\): pods "nope" not found/);

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
      assertEquals(waited.code, 0, waited.stderr);
      assertMatch(waited.stdout, /pod\/lvmh-w-b condition met/);

      const raw = await kubectl(
        k,
        home,
        "get",
        "--raw",
        "/api/v1/namespaces/x/pods?watch=1&resourceVersion=1",
      );
      assertEquals(raw.code, 0, raw.stderr);
      const line = JSON.parse(raw.stdout.trim().split("\n")[0]);
      assertEquals([line.type, line.object.code, line.object.reason], ["ERROR", 410, "Expired"]);

      k.setLogs("lvmh-w-b", "one\ntwo\n");
      const logs = await kubectl(k, home, "logs", "lvmh-w-b", "-c", "worker", "--tail=1");
      assertEquals([logs.code, logs.stdout], [0, "two\n"], logs.stderr);

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
      assertEquals(patched.code, 0, patched.stderr);
      assertEquals(k.get("pods", "lvmh-w-b")?.metadata.labels, { ...labels, x: "y" });

      k.deny("delete", "persistentvolumeclaims");
      const canI = await kubectl(k, home, "auth", "can-i", "delete", "persistentvolumeclaims");
      assertEquals([canI.code, canI.stdout.trim()], [1, "no"]);
      const canGet = await kubectl(k, home, "auth", "can-i", "get", "pods");
      assertEquals([canGet.code, canGet.stdout.trim()], [0, "yes"]);

      const del = await kubectl(k, home, "delete", "pod", "lvmh-w-b", "--timeout=30s");
      assertEquals(del.code, 0, del.stderr);
      assertMatch(del.stdout, /pod "lvmh-w-b" deleted/);
      assertEquals(k.get("pods", "lvmh-w-b"), undefined);
    });
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("kube fake: scripted Pod steps carry the kubelet's reasons and bind the Pod", () =>
  withFake(async (k, c) => {
    await c.call("POST", "~/pods", {
      ...pod("steps"),
      spec: {
        restartPolicy: "Never",
        initContainers: [{ name: "clone", image: "busybox:1" }],
        containers: [{ name: "worker", image: "busybox:1" }],
      },
    });
    const rv = (await c.call("GET", "~/pods")).body.metadata.resourceVersion;
    const w = await c.watch(`~/pods?watch=1&resourceVersion=${rv}`);
    k.scriptPod("steps", "unschedulable", { message: "0/3 nodes are available: 3 Insufficient cpu." });
    let e = await w.next();
    const sched = ((e!.object.status as Json).conditions as Json[])[0];
    assertEquals([sched.type, sched.status, sched.reason, sched.message], [
      "PodScheduled",
      "False",
      "Unschedulable",
      "0/3 nodes are available: 3 Insufficient cpu.",
    ]);
    assertEquals((e!.object.spec as Json).nodeName, undefined, "not bound while unschedulable");
    k.scriptPod("steps", "initRunning");
    e = await w.next();
    assertEquals((e!.object.spec as Json).nodeName, "fake-node");
    const init = ((e!.object.status as Json).initContainerStatuses as Json[])[0];
    assert((init.state as Json).running);
    k.scriptPod("steps", "initFailed", { message: "fatal: repository 'x' not found" });
    e = await w.next();
    const st = e!.object.status as Json;
    assertEquals(st.phase, "Failed");
    const term = ((st.initContainerStatuses as Json[])[0].state as Json).terminated as Json;
    assertEquals([term.exitCode, term.message], [1, "fatal: repository 'x' not found"]);
    k.scriptPod("steps", "evicted");
    e = await w.next();
    assertEquals([(e!.object.status as Json).phase, (e!.object.status as Json).reason], [
      "Failed",
      "Evicted",
    ]);
    k.scriptPod("steps", "oomKilled");
    e = await w.next();
    const s2 = e!.object.status as Json;
    assertEquals(s2.reason, undefined, "a later step clears the eviction reason");
    const worker = ((s2.containerStatuses as Json[])[0].state as Json).terminated as Json;
    assertEquals([worker.reason, worker.exitCode], ["OOMKilled", 137]);
    k.scriptPod("steps", "imagePull", { reason: "ErrImagePull" });
    e = await w.next();
    const waiting = (((e!.object.status as Json).containerStatuses as Json[])[0].state as Json)
      .waiting as Json;
    assertEquals(waiting.reason, "ErrImagePull");
    await w.close();
  }));

Deno.test("kube fake: PUT with a stale resourceVersion is a 409 Conflict; JSON patch; Pod spec is immutable", () =>
  withFake(async (_k, c) => {
    const s = await c.call("POST", "~/secrets", secret("upd"));
    const stale = { ...s.body, metadata: { ...(s.body.metadata as Json), labels: { a: "1" } } };
    assertEquals((await c.call("PUT", "~/secrets/upd", stale)).status, 200);
    const again = await c.call("PUT", "~/secrets/upd", stale);
    assertEquals([again.status, again.body.reason], [409, "Conflict"]);
    assertMatch(
      String(again.body.message),
      /Operation cannot be fulfilled on secrets "upd": the object has been modified/,
    );
    const jp = await c.call(
      "PATCH",
      "~/secrets/upd",
      [{ op: "add", path: "/metadata/labels/b", value: "2" }, { op: "remove", path: "/metadata/labels/a" }],
      "application/json-patch+json",
    );
    assertEquals((jp.body.metadata as Json).labels, { b: "2" });
    const apply = await c.call("PATCH", "~/secrets/upd", {}, "application/apply-patch+yaml");
    assertEquals(apply.status, 415);
    await c.call("POST", "~/pods", pod("imm"));
    const change = await c.call(
      "PATCH",
      "~/pods/imm",
      { spec: { restartPolicy: "Always" } },
      "application/strategic-merge-patch+json",
    );
    assertEquals([change.status, change.body.reason], [422, "Invalid"]);
  }));

Deno.test("kube fake: the Docker kubelet's quantities and $(VAR) expansion", () => {
  assertEquals(memoryBytes("256Mi"), 256 * 1024 * 1024);
  assertEquals(memoryBytes("1G"), 1e9);
  assertEquals(memoryBytes("1024"), 1024);
  assertEquals(nanoCpus("500m"), 5e8);
  assertEquals(nanoCpus("2"), 2e9);
  const env = new Map([["A", "x"], ["B", "y"]]);
  assertEquals(expand("$(A)-$(B)-$(C)-$$(A)", env), "x-y-$(C)-$(A)");
});
