/**
 * The fake Kubernetes API server (testing/fixtures/kube_api.ts) alone, its reads: label and field selectors,
 * list pages with `continue`, watches from a list's version (resumed, filtered, with BOOKMARK events, ended by
 * timeoutSeconds), and a watch that fails: 410 as an ERROR event, as a bare 410, and a stream dropped.
 */
import assert from "node:assert/strict";
import { pod, secret, waitForWatches, withFake } from "../testing/fixtures/kube/with_fake.ts";

type Json = Record<string, unknown>;

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
    assert.deepEqual(await names("labelSelector=" + encodeURIComponent("app=lvmh")), "a,b");
    assert.deepEqual(await names("labelSelector=" + encodeURIComponent("app==lvmh,tier=s")), "b");
    assert.deepEqual(await names("labelSelector=" + encodeURIComponent("app!=lvmh")), "c,d");
    assert.deepEqual(await names("labelSelector=" + encodeURIComponent("tier in (w,x)")), "a");
    assert.deepEqual(await names("labelSelector=" + encodeURIComponent("app notin (lvmh)")), "c,d");
    assert.deepEqual(await names("labelSelector=app"), "a,b,c");
    assert.deepEqual(await names("labelSelector=" + encodeURIComponent("!app")), "d");
    assert.deepEqual(await names("fieldSelector=" + encodeURIComponent("metadata.name=c")), "c");
    const bad = await c.call("GET", "~/secrets?fieldSelector=spec.bogus%3Dx");
    assert.deepEqual([bad.status, bad.body.message], [400, "field label not supported: spec.bogus"]);
    const page = await c.call("GET", "~/secrets?limit=3");
    assert.deepEqual(page.body.items.length, 3);
    assert.deepEqual(page.body.kind, "SecretList");
    assert.deepEqual(page.body.items[0].kind, undefined, "list items carry no kind");
    const meta = page.body.metadata as Json;
    assert.deepEqual(meta.remainingItemCount, 1);
    const rest = await c.call(
      "GET",
      `~/secrets?limit=3&continue=${encodeURIComponent(String(meta.continue))}`,
    );
    assert.deepEqual(rest.body.items.map((i) => (i.metadata as Json).name), ["d"]);
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
    assert.deepEqual(w.status, 200);
    await c.call("POST", "~/pods", pod("p1"));
    await c.call("POST", "~/pods", { ...pod("other"), metadata: { name: "other", labels: { x: "y" } } });
    k.setPodStatus("p1", { phase: "Running" });
    const added = await w.next();
    assert.deepEqual([added?.type, added?.object.metadata.name, added?.object.kind], ["ADDED", "p1", "Pod"]);
    const modified = await w.next();
    assert.deepEqual([modified?.type, (modified?.object.status as Json).phase], ["MODIFIED", "Running"]);
    const addedRv = String(added!.object.metadata.resourceVersion);
    let e = await w.next(3000);
    while (e?.type !== "BOOKMARK") e = await w.next(3000);
    assert.deepEqual(Object.keys(e.object.metadata), ["resourceVersion"]);
    assert.deepEqual(e.object.metadata.resourceVersion, k.resourceVersion);
    await w.close();

    const resumed = await c.watch(`~/pods?watch=true&resourceVersion=${addedRv}&timeoutSeconds=1`);
    const r1 = await resumed.next();
    assert.deepEqual(
      [r1?.type, r1?.object.metadata.name],
      ["ADDED", "other"],
      "resume replays only later events",
    );
    const r2 = await resumed.next();
    assert.deepEqual([r2?.type, r2?.object.metadata.name], ["MODIFIED", "p1"]);
    assert.deepEqual(await resumed.next(3000), null, "timeoutSeconds ends the stream cleanly");

    const fresh = await c.watch("~/pods?watch=1&fieldSelector=metadata.name%3Dp1");
    const f1 = await fresh.next();
    assert.deepEqual(
      [f1?.type, f1?.object.metadata.name],
      ["ADDED", "p1"],
      "no version: current state as ADDED",
    );
    await fresh.close();
  }, { bookmarkMs: 50 }));

Deno.test("kube fake: 410 as an ERROR event, as a bare 410, and a dropped stream", () =>
  withFake(async (k, c) => {
    const first = await c.call("POST", "~/secrets", secret("s0"));
    const oldRv = String((first.body.metadata as Json).resourceVersion);
    for (let i = 1; i <= 4; i++) await c.call("POST", "~/secrets", secret(`s${i}`));
    const tooOld = await c.watch(`~/secrets?watch=1&resourceVersion=${oldRv}`);
    assert.deepEqual(tooOld.status, 200);
    const err = await tooOld.next();
    assert.deepEqual(err?.type, "ERROR");
    assert.deepEqual([err?.object.kind, err?.object.code, err?.object.reason], ["Status", 410, "Expired"]);
    assert.deepEqual(await tooOld.next(), null);

    // An open watch broken with an ERROR event; resuming from its version is then too old too.
    let rv = String((await c.call("GET", "~/secrets")).body.metadata.resourceVersion);
    const open = await c.watch(`~/secrets?watch=1&resourceVersion=${rv}`);
    await waitForWatches(k, 1);
    k.breakWatches("event");
    const broken = await open.next();
    assert.deepEqual([broken?.type, broken?.object.code], ["ERROR", 410]);
    assert.deepEqual(await open.next(), null);
    const stale = await c.watch(`~/secrets?watch=1&resourceVersion=${rv}`);
    assert.deepEqual((await stale.next())?.object.code, 410);

    // Bare: the stream ends, then a watch from an old version is an HTTP 410; a relist's version works.
    rv = String((await c.call("GET", "~/secrets")).body.metadata.resourceVersion);
    const open2 = await c.watch(`~/secrets?watch=1&resourceVersion=${rv}`);
    await waitForWatches(k, 1);
    k.breakWatches("bare");
    assert.deepEqual(await open2.next(), null);
    const bare = await c.call("GET", `~/secrets?watch=1&resourceVersion=${rv}`);
    assert.deepEqual([bare.status, bare.body.kind, bare.body.reason], [410, "Status", "Gone"]);
    const relist = String((await c.call("GET", "~/secrets")).body.metadata.resourceVersion);
    assert.notDeepEqual(relist, rv);
    const ok = await c.watch(`~/secrets?watch=1&resourceVersion=${relist}`);
    await c.call("DELETE", "~/secrets/s1");
    assert.deepEqual((await ok.next())?.type, "DELETED");

    // Drop: the stream is cut without an event; resuming from the last version still works.
    k.breakWatches("drop");
    let cut = false;
    try {
      await ok.next();
    } catch {
      cut = true;
    }
    assert.ok(cut, "a dropped stream is an error for the reader, not a clean end");
    const again = await c.watch(`~/secrets?watch=1&resourceVersion=${relist}`);
    assert.deepEqual((await again.next())?.type, "DELETED");
    await again.close();
  }, { watchHistory: 3 }));
