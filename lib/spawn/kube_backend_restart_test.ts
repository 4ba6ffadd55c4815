/**
 * The Kubernetes backend when things change under it, against the fake API server with the scriptable kubelet
 * (`_kube_test_env.ts`): a watch broken each way, a daemon restarted mid-clone, a permission taken away, the
 * daemon's token changed between a stop and a resume.
 */
import assert from "node:assert/strict";
import { waitFor } from "../../testing/daemon.ts";
import { podName, secretName } from "../kube/objects.ts";
import { UnavailableError } from "../errors.ts";
import { cloning, jobOf, podMade, running, settled, setup, SHA, spawnRunning } from "./_kube_test_env.ts";

for (const mode of ["event", "bare", "drop"] as const) {
  Deno.test(`kube backend: a watch broken by ${mode} is resumed and the spawn still sees its Pod run`, async () => {
    const env = await setup();
    try {
      const spawned = env.spawner.spawn({ repo: "group/sub/proj" });
      await podMade(env);
      const id = jobOf(env).sessionId;
      env.fake.setPodStatus(podName(id), cloning());
      await waitFor(() => jobOf(env).state === "cloning", "cloning", 5000);
      const before = env.fake.requests.length;
      env.fake.breakWatches(mode);
      env.fake.setPodStatus(podName(id), running(id));
      await spawned;
      await settled(env, "running");
      const after = env.fake.requests.slice(before).filter((r) =>
        r.method === "GET" && r.url.includes("/pods?")
      );
      const relisted = after.some((r) => !/[?&]watch=/.test(r.url));
      // A 410 in either form relists; a drop watches again from the last version seen, without a list.
      assert.equal(relisted, mode !== "drop", after.map((r) => r.url).join("\n"));
      // The relist may have shown the running Pod already; the watch follows it.
      await waitFor(
        () => env.fake.requests.slice(before).some((r) => /\/pods\?.*[?&]?watch=1/.test(r.url)),
        "watched again",
        5000,
      );
    } finally {
      await env.close();
    }
  });
}

Deno.test("kube backend: a restarted daemon finds a cloning Pod by label, hands it the credential and records its base", async () => {
  const env = await setup();
  try {
    const spawned = env.spawner.spawn({ repo: "group/sub/proj" });
    spawned.catch(() => {});
    await podMade(env);
    const id = jobOf(env).sessionId;
    env.fake.setPodStatus(podName(id), cloning());
    await waitFor(() => jobOf(env).state === "cloning", "cloning", 5000);
    await env.restart({ wait: false });
    // Asked before the new daemon listed its Pods: ask again (a 503 the init container retries), not a
    // refusal for good (a 404, which would fail the clone).
    assert.throws(() => env.spawner.cloneCredential!(id), UnavailableError);
    await env.spawner.recovered();
    assert.deepEqual(env.spawner.jobs().map((j) => [j.sessionId, j.state]), [[id, "running"]]);
    await waitFor(
      () => env.spawner.cloneCredential!(id) !== null,
      "the new daemon hands out the credential",
      5000,
    );
    env.fake.setPodStatus(podName(id), running(id));
    await waitFor(() => env.workspaces.get(id)?.baseSha === SHA, "the base is recorded", 5000);
  } finally {
    await env.close();
  }
});

Deno.test("kube backend: a missing permission is one sentence naming verb and resource; spawn is refused", async () => {
  const env = await setup();
  try {
    env.fake.deny("delete", "secrets");
    // The verdict taken at start may predate the denial: a fresh backend checks again.
    await env.restart();
    const problem = await env.backend.preflightProblem();
    assert.equal(
      problem,
      `Kubernetes: lvmh may not delete secrets in namespace "${env.fake.namespace}" (grant it in the Role, see deploy/kubernetes/rbac.yaml)`,
    );
    await assert.rejects(
      env.spawner.spawn({ repo: "g/p" }),
      (e) => e instanceof UnavailableError && e.message === problem,
    );
    assert.equal(env.fake.list("pods").length, 0);
    assert.ok(env.logs.includes(`lvmh: ${problem}`), env.logs.join("\n"));
    // The dry run went with the real spec.
    assert.ok(
      !env.fake.requests.some((r) => r.url.includes("dryRun=All")),
      "no dry run before the rights are there",
    );
  } finally {
    await env.close();
  }
});

Deno.test("kube backend: a resume after the daemon's token changed makes the immutable Secret again", async () => {
  const env = await setup();
  try {
    const id = await spawnRunning(env);
    await env.spawner.stopSession(id);
    const before = env.fake.get("secrets", secretName(id))!;
    env.tokenSuffix = "rotated";
    const resumed = env.spawner.resume(id);
    await waitFor(() => env.fake.get("pods", podName(id)), "the resumed Pod", 5000);
    env.fake.setPodStatus(podName(id), running(id, "lvmh: kept"));
    await resumed;
    const after = env.fake.get("secrets", secretName(id)) as unknown as {
      metadata: { uid: string };
      data: { token: string };
    };
    assert.notEqual(after.metadata.uid, before.metadata.uid);
    assert.equal(atob(after.data.token), `agent.${id}.rotated`);
  } finally {
    await env.close();
  }
});
