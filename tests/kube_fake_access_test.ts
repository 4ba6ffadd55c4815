/**
 * The fake Kubernetes API server (testing/fixtures/kube_api.ts) alone, who may do what: 401 without the
 * bearer token, SelfSubjectAccessReviews before and after a test denies a verb, the 403 that follows, and the
 * token kept out of the fake's request log.
 */
import assert from "node:assert/strict";
import { pvc, withFake } from "../testing/fixtures/kube/with_fake.ts";

type Json = Record<string, unknown>;

Deno.test("kube fake: 401 without the token, SelfSubjectAccessReview and 403 after deny", () =>
  withFake(async (k, c) => {
    const http = Deno.createHttpClient({ caCerts: [await Deno.readTextFile(k.caFile)] });
    try {
      const res = await fetch(`${k.url}/api/v1/namespaces/lvmh/pods`, { client: http });
      const body = await res.json();
      assert.deepEqual([res.status, body.kind, body.reason], [401, "Status", "Unauthorized"]);
      const wrong = await fetch(`${k.url}/api/v1/namespaces/lvmh/pods`, {
        client: http,
        headers: { authorization: "Bearer nope" },
      });
      assert.deepEqual(wrong.status, 401);
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
    assert.deepEqual([before.status, (before.body.status as Json).allowed], [201, true]);
    k.deny("delete", "persistentvolumeclaims");
    k.deny("get", "pods/log");
    assert.deepEqual(((await ssar("delete", "persistentvolumeclaims")).body.status as Json).allowed, false);
    assert.deepEqual(((await ssar("get", "pods", "log")).body.status as Json).allowed, false);
    assert.deepEqual(((await ssar("get", "pods")).body.status as Json).allowed, true);
    await c.call("POST", "~/persistentvolumeclaims", pvc("ws"));
    const del = await c.call("DELETE", "~/persistentvolumeclaims/ws");
    assert.deepEqual([del.status, del.body.reason], [403, "Forbidden"]);
    assert.deepEqual(
      del.body.message,
      `persistentvolumeclaims "ws" is forbidden: User "${k.user}" cannot delete resource "persistentvolumeclaims" in API group "" in the namespace "lvmh"`,
    );
    assert.ok(!JSON.stringify(k.requests).includes(c.token), "the token is redacted from the request log");
    assert.deepEqual(k.requests.at(-1)?.headers.authorization, "Bearer <redacted>");
  }));
