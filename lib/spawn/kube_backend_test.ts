/**
 * The Kubernetes backend and the spawner together against the fake API server with the scriptable kubelet
 * (`_kube_test_env.ts`): a spawn's way through the states, and each way it fails. The real clone and worker
 * run in tests/e2e/kube_spawn_test.ts.
 */
import assert from "node:assert/strict";
import { waitFor } from "../../testing/daemon.ts";
import { claimName, podName, secretName } from "../kube/objects.ts";
import {
  baseOf,
  cloned,
  cloning,
  GITLAB_TOKEN,
  initializing,
  jobOf,
  now,
  podMade,
  podStatus,
  running,
  settled,
  setup,
  SHA,
  spawnRunning,
} from "./_kube_test_env.ts";

Deno.test("kube backend: spawn → cloning (credential once) → running; stop keeps claim and Secret; resume; discard", async () => {
  const env = await setup();
  try {
    const spawned = env.spawner.spawn({ repo: "group/sub/proj", branch: "main" });
    await podMade(env);
    const id = jobOf(env).sessionId;
    const pod = podName(id);
    // 201 once the Pod is created: the spawn has answered while the Pod has not even been scheduled.
    assert.equal((await spawned).containerId, pod);
    assert.equal(jobOf(env).state, "queued");
    assert.equal(env.spawner.container(id)?.state, "starting");
    assert.ok(env.fake.get("secrets", secretName(id)), "the session Secret exists");
    assert.ok(env.fake.get("persistentvolumeclaims", claimName(id)), "the claim exists");
    env.fake.setPodStatus(pod, cloning());
    await waitFor(() => jobOf(env).state === "cloning", "the job is cloning", 5000);
    // The init container's one fetch of the GitLab token; a second is refused.
    assert.deepEqual(env.spawner.cloneCredential!(id), { credential: GITLAB_TOKEN });
    assert.equal(env.spawner.cloneCredential!(id), null);
    assert.equal(env.spawner.cloneCredential!("another-session"), null);
    env.fake.setPodStatus(pod, running(id));
    await settled(env, "running");
    await waitFor(() => env.spawner.container(id)?.state === "running", "the worker running", 5000);
    assert.deepEqual(env.workspaces.get(id) && { ...env.workspaces.get(id), createdAt: 0 }, {
      sessionId: id,
      repo: "group/sub/proj",
      baseBranch: "main",
      baseSha: SHA,
      branch: `lvmh/${id.replaceAll("-", "").slice(0, 8)}`,
      createdAt: 0,
    });

    env.fake.setLogs(pod, "lvmh-bridge: session ready\n", "worker");
    await env.spawner.stopSession(id);
    assert.equal(env.fake.get("pods", pod), undefined, "the Pod is gone");
    assert.ok(env.fake.get("persistentvolumeclaims", claimName(id)), "the claim is kept");
    assert.ok(env.fake.get("secrets", secretName(id)), "the Secret is kept");
    assert.equal(env.spawner.container(id)?.state, "stopped");
    assert.equal(await env.spawner.logs(id, 10), "lvmh-bridge: session ready\n");

    const resumed = env.spawner.resume(id);
    await waitFor(() => env.fake.get("pods", pod) !== undefined, "a new Pod for the resume", 5000);
    const resumePod = env.fake.get("pods", pod)!;
    const init = (resumePod.spec as { initContainers: { command: string[] }[] }).initContainers[0];
    assert.equal(init.command[2], "keep", "a resume keeps the working copy");
    assert.equal(env.spawner.cloneCredential!(id), null, "a resume never hands out the credential");
    env.fake.setPodStatus(pod, running(id, "lvmh: kept"));
    await resumed;
    assert.equal(env.spawner.container(id)?.state, "running");
    await env.spawner.stopSession(id);
    await env.spawner.discard(id);
    assert.equal(
      env.fake.get("persistentvolumeclaims", claimName(id)),
      undefined,
      "discard deletes the claim",
    );
    assert.equal(env.fake.get("secrets", secretName(id)), undefined, "discard deletes the Secret");
    assert.equal(env.spawner.container(id), undefined);

    // The GitLab token never reached the API server (bodies, URLs, headers).
    for (const r of env.fake.requests) {
      assert.ok(!JSON.stringify(r).includes(GITLAB_TOKEN), `${r.method} ${r.url} holds the GitLab token`);
    }
    // Every write asked for strict field validation.
    for (const r of env.fake.requests.filter((r) => r.method === "POST" && /\/namespaces\//.test(r.url))) {
      assert.match(r.url, /fieldValidation=Strict/);
    }
  } finally {
    await env.close();
  }
});

Deno.test("kube backend: a failed clone fails the spawn with git's message and removes what it made", async () => {
  const env = await setup();
  try {
    const spawned = env.spawner.spawn({ repo: "group/sub/proj", branch: "nope" });
    await podMade(env);
    const id = jobOf(env).sessionId;
    env.fake.setPodStatus(
      podName(id),
      podStatus({
        phase: "Failed",
        clone: cloned("fatal: Remote branch nope not found", 1),
        worker: initializing,
      }),
    );
    assert.equal((await spawned).containerId, podName(id));
    await settled(env, "failed");
    assert.match(jobOf(env).error!, /^clone failed: fatal: Remote branch nope not found/);
    await waitFor(() => env.fake.list("persistentvolumeclaims").length === 0, "the claim is removed", 5000);
    assert.equal(env.fake.list("secrets").length, 0);
    assert.equal(env.fake.list("pods").length, 0);
    assert.equal(env.spawner.container(id), undefined);
  } finally {
    await env.close();
  }
});

Deno.test("kube backend: an image that cannot be pulled fails the spawn with the kubelet's words", async () => {
  const env = await setup();
  try {
    const spawned = env.spawner.spawn({ repo: "group/sub/proj" });
    await podMade(env);
    env.fake.setPodStatus(
      podName(jobOf(env).sessionId),
      podStatus({
        phase: "Pending",
        clone: {
          waiting: {
            reason: "ErrImagePull",
            message: 'pull access denied for "registry.example/lvmh-worker"',
          },
        },
      }),
    );
    await spawned;
    await settled(env, "failed");
    assert.match(jobOf(env).error!, /ErrImagePull: pull access denied/);
    await waitFor(() => env.fake.list("persistentvolumeclaims").length === 0, "the claim is removed", 5000);
  } finally {
    await env.close();
  }
});

Deno.test("kube backend: unschedulable is queued with the scheduler's message, then failed past the timeout", async () => {
  const env = await setup({ startTimeoutMs: 1500 });
  try {
    const spawned = env.spawner.spawn({ repo: "group/sub/proj" });
    spawned.catch(() => {});
    await podMade(env);
    const message = "0/3 nodes are available: 3 Insufficient memory.";
    env.fake.setPodStatus(
      podName(jobOf(env).sessionId),
      podStatus({
        phase: "Pending",
        scheduled: {
          type: "PodScheduled",
          status: "False",
          reason: "Unschedulable",
          message,
          lastTransitionTime: now(),
        },
      }),
    );
    await waitFor(() => jobOf(env).error === message, "queued with the scheduler's message", 5000);
    assert.equal(jobOf(env).state, "queued");
    await spawned;
    await settled(env, "failed");
    assert.match(jobOf(env).error!, /not scheduled after 2 s: 0\/3 nodes are available/);
    await waitFor(() => env.fake.list("persistentvolumeclaims").length === 0, "the claim is removed", 5000);
  } finally {
    await env.close();
  }
});

Deno.test("kube backend: a running worker killed for memory is crashed (oom); lvmh's own delete is a stop", async () => {
  const env = await setup();
  try {
    const id = await spawnRunning(env);
    env.fake.setPodStatus(
      podName(id),
      podStatus({
        phase: "Failed",
        initialized: true,
        clone: cloned(baseOf(id)),
        worker: { terminated: { exitCode: 137, reason: "OOMKilled", startedAt: now(), finishedAt: now() } },
      }),
    );
    await env.spawner.check();
    assert.equal(env.spawner.container(id)?.state, "crashed");
    assert.deepEqual(
      { exitCode: env.spawner.container(id)?.exitCode, reason: env.spawner.container(id)?.reason },
      { exitCode: 137, reason: "oom" },
    );
    assert.equal(env.fake.get("pods", podName(id)), undefined, "the ended Pod is removed");
    assert.ok(env.fake.get("persistentvolumeclaims", claimName(id)), "its claim stays for a resume");
  } finally {
    await env.close();
  }
});
