/**
 * The fake Kubernetes API server (testing/fixtures/kube_api.ts) alone, its writes: create and get with the
 * API's `Status` objects (409, 404) and one resourceVersion counter across kinds, validation as 422 Invalid with
 * its causes, `dryRun=All` and the three `fieldValidation` modes, and update: PUT's 409 Conflict on a stale
 * resourceVersion, the patch types, an immutable Pod spec.
 */
import assert from "node:assert/strict";
import { labels, pod, pvc, secret, withFake } from "../testing/fixtures/kube/with_fake.ts";

type Json = Record<string, unknown>;

Deno.test("kube fake: create, get, 409/404/422 Status objects, one resourceVersion counter", () =>
  withFake(async (k, c) => {
    const s = await c.call("POST", "~/secrets", secret("lvmh-s-1"));
    assert.deepEqual(s.status, 201);
    const meta = s.body.metadata as Json;
    assert.match(String(meta.uid), /^[0-9a-f-]{36}$/);
    assert.match(String(meta.creationTimestamp), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.deepEqual(s.body.data, { token: btoa("t0k") }, "stringData is folded into base64 data");
    assert.deepEqual(s.body.stringData, undefined);

    const again = await c.call("POST", "~/secrets", secret("lvmh-s-1"));
    assert.deepEqual(again.status, 409);
    assert.deepEqual(again.body.kind, "Status");
    assert.deepEqual(again.body.reason, "AlreadyExists");
    assert.deepEqual(again.body.message, 'secrets "lvmh-s-1" already exists');

    const missing = await c.call("GET", "~/pods/nope");
    assert.deepEqual([missing.status, missing.body.reason, missing.body.message], [
      404,
      "NotFound",
      'pods "nope" not found',
    ]);

    const p = await c.call("POST", "~/pods", pod("lvmh-w-1"));
    assert.deepEqual(p.status, 201);
    assert.deepEqual((p.body.status as Json).phase, "Pending");
    const rv1 = Number(meta.resourceVersion);
    const rv2 = Number((p.body.metadata as Json).resourceVersion);
    assert.ok(rv2 > rv1, "one counter across kinds");
    const v = await c.call("POST", "~/persistentvolumeclaims", pvc("lvmh-ws-1"));
    assert.ok(Number((v.body.metadata as Json).resourceVersion) > rv2);
    assert.deepEqual(k.list("pods").map((o) => o.metadata.name), ["lvmh-w-1"]);

    const patched = await c.call(
      "PATCH",
      "~/pods/lvmh-w-1",
      { metadata: { annotations: { "lvmh.dev/repo": "group/sub/project" } } },
      "application/merge-patch+json",
    );
    assert.deepEqual(patched.status, 200);
    assert.ok(Number((patched.body.metadata as Json).resourceVersion) > rv2, "a patch bumps the version");
    const same = await c.call(
      "PATCH",
      "~/pods/lvmh-w-1",
      { metadata: { annotations: { "lvmh.dev/repo": "group/sub/project" } } },
      "application/merge-patch+json",
    );
    assert.deepEqual(
      (same.body.metadata as Json).resourceVersion,
      (patched.body.metadata as Json).resourceVersion,
      "a no-op write keeps it",
    );
  }));

Deno.test("kube fake: 422 Invalid with details.causes for names and labels", () =>
  withFake(async (_k, c) => {
    const noName = await c.call("POST", "~/secrets", { ...secret(""), metadata: { labels } });
    assert.deepEqual(noName.status, 422);
    assert.deepEqual(noName.body.reason, "Invalid");
    const causes = (noName.body.details as Json).causes as Json[];
    assert.deepEqual(causes[0].field, "metadata.name");
    assert.deepEqual(causes[0].reason, "FieldValueRequired");

    const badName = await c.call("POST", "~/pods", pod("Bad_Name"));
    assert.deepEqual(badName.status, 422);
    assert.match(
      String(badName.body.message),
      /^Pod "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain/,
    );

    const slash = await c.call(
      "POST",
      "~/pods",
      pod("x", { metadata: { name: "x", labels: { "lvmh.dev/repo": "group/sub" } } }),
    );
    assert.deepEqual(slash.status, 422);
    assert.deepEqual(((slash.body.details as Json).causes as Json[])[0].field, "metadata.labels");
    assert.match(
      String(slash.body.message),
      /Invalid value: "group\/sub": a valid label must be an empty string/,
    );

    const long = await c.call(
      "POST",
      "~/pods",
      pod("y", { metadata: { name: "y", labels: { a: "x".repeat(64) } } }),
    );
    assert.deepEqual(long.status, 422);
    assert.match(String(long.body.message), /must be no more than 63 characters/);

    const noContainers = await c.call("POST", "~/pods", {
      metadata: { name: "z" },
      spec: { containers: [] },
    });
    assert.deepEqual(noContainers.status, 422);
    assert.deepEqual(((noContainers.body.details as Json).causes as Json[])[0].field, "spec.containers");
  }));

Deno.test("kube fake: dryRun=All persists nothing; fieldValidation Strict, Warn and Ignore", () =>
  withFake(async (k, c) => {
    const rv = k.resourceVersion;
    const dry = await c.call("POST", "~/pods?dryRun=All", pod("dry"));
    assert.deepEqual(dry.status, 201);
    assert.deepEqual((dry.body.metadata as Json).name, "dry");
    assert.deepEqual(k.list("pods"), []);
    assert.deepEqual(k.resourceVersion, rv);
    const dryBad = await c.call("POST", "~/pods?dryRun=All", pod("Bad"));
    assert.deepEqual(dryBad.status, 422, "dry run still validates");

    const bogus = pod("strict");
    (bogus.spec.containers[0] as Json).imagePulPolicy = "Always";
    (bogus.spec as Json).securityContext = { runAsNonRoot: true, fsGroupp: 1 };
    const strict = await c.call("POST", "~/pods?fieldValidation=Strict", bogus);
    assert.deepEqual(strict.status, 400);
    assert.deepEqual(strict.body.reason, "BadRequest");
    assert.match(
      String(strict.body.message),
      /strict decoding error: .*unknown field "spec.containers\[0\].imagePulPolicy"/,
    );
    assert.match(String(strict.body.message), /unknown field "spec.securityContext.fsGroupp"/);
    const typed = await c.call("POST", "~/pods?fieldValidation=Strict", {
      ...pod("typed"),
      spec: { containers: [{ name: "w", image: 5 }] },
    });
    assert.deepEqual(typed.status, 400, "a wrong type is refused in every mode");

    const warn = await c.call("POST", "~/pods", bogus);
    assert.deepEqual(warn.status, 201);
    assert.match(
      warn.headers.get("warning") ?? "",
      /unknown field \\"spec.containers\[0\].imagePulPolicy\\"/,
    );
    const stored = k.list("pods")[0];
    assert.deepEqual(
      ((stored.spec as Json).containers as Json[])[0].imagePulPolicy,
      undefined,
      "dropped on decode",
    );
    const ignore = await c.call("POST", "~/pods?fieldValidation=Ignore", {
      ...bogus,
      metadata: { name: "ign" },
    });
    assert.deepEqual([ignore.status, ignore.headers.get("warning")], [201, null]);
  }));

Deno.test("kube fake: PUT with a stale resourceVersion is a 409 Conflict; JSON patch; Pod spec is immutable", () =>
  withFake(async (_k, c) => {
    const s = await c.call("POST", "~/secrets", secret("upd"));
    const stale = { ...s.body, metadata: { ...(s.body.metadata as Json), labels: { a: "1" } } };
    assert.deepEqual((await c.call("PUT", "~/secrets/upd", stale)).status, 200);
    const again = await c.call("PUT", "~/secrets/upd", stale);
    assert.deepEqual([again.status, again.body.reason], [409, "Conflict"]);
    assert.match(
      String(again.body.message),
      /Operation cannot be fulfilled on secrets "upd": the object has been modified/,
    );
    const jp = await c.call(
      "PATCH",
      "~/secrets/upd",
      [{ op: "add", path: "/metadata/labels/b", value: "2" }, { op: "remove", path: "/metadata/labels/a" }],
      "application/json-patch+json",
    );
    assert.deepEqual((jp.body.metadata as Json).labels, { b: "2" });
    const apply = await c.call("PATCH", "~/secrets/upd", {}, "application/apply-patch+yaml");
    assert.deepEqual(apply.status, 415);
    await c.call("POST", "~/pods", pod("imm"));
    const change = await c.call(
      "PATCH",
      "~/pods/imm",
      { spec: { restartPolicy: "Always" } },
      "application/strategic-merge-patch+json",
    );
    assert.deepEqual([change.status, change.body.reason], [422, "Invalid"]);
  }));
