/**
 * The Kubernetes backend and the spawner together against the fake API server (loopback TLS, its own CA and
 * token) with the scriptable kubelet: the test plays the kubelet's part with `setPodStatus`, so every state
 * of the mapping is reached on purpose. The real clone and worker run in tests/e2e/kube_spawn_test.ts.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { type FakeKube, startFakeKube } from "../../testing/fixtures/kube_api.ts";
import { waitFor } from "../../testing/daemon.ts";
import { createKubeBackend, type KubeBackend } from "./kube_backend.ts";
import { createSpawner, type Spawner } from "../spawner.ts";
import { Workspaces } from "../workspaces.ts";
import { ContainerStates } from "./containers.ts";
import type { SpawnJob } from "../protocol.ts";
import { claimName, podName, secretName } from "../kube/objects.ts";
import { UnavailableError } from "../errors.ts";

const GITLAB_TOKEN = "glpat-kube-test-secret-0123456789";
const SHA = "0123456789abcdef0123456789abcdef01234567";
const now = () => new Date().toISOString().replace(/\.\d+Z$/, "Z");

interface Env {
  fake: FakeKube;
  backend: KubeBackend;
  spawner: Spawner;
  workspaces: Workspaces;
  jobs: SpawnJob[];
  logs: string[];
  /** The daemon token's part of each agent token (a changed LVMH_TOKEN changes it). */
  tokenSuffix: string;
  /** Another backend and spawner on the same cluster (a restarted daemon); `wait: false` returns at once. */
  restart(o?: { wait?: boolean }): Promise<void>;
  close(): Promise<void>;
}

async function setup(o: { startTimeoutMs?: number } = {}): Promise<Env> {
  const fake = await startFakeKube({ kubelet: "script", bookmarkMs: 200 });
  const db = new DatabaseSync(":memory:");
  const workspaces = new Workspaces(db);
  const containers = new ContainerStates(db);
  const logs: string[] = [];
  const env = { fake, workspaces, logs, jobs: [] as SpawnJob[], tokenSuffix: "hmac" } as Env;
  const make = () => {
    env.backend = createKubeBackend({
      workerImage: "registry.example/lvmh-worker:1",
      modelsJson: null,
      workerLimits: { memoryBytes: 512 * 1024 ** 2, cpus: 1 },
      kube: {
        connection: {
          url: fake.url,
          namespace: fake.namespace,
          tokenFile: fake.tokenFile,
          caFile: fake.caFile,
        },
        storageClass: null,
        storageSize: "1Gi",
        llmSecret: "lvmh-llm",
        startTimeoutMs: o.startTimeoutMs ?? 300_000,
      },
    }, {
      credential: () => GITLAB_TOKEN,
      onCloned: (sessionId, repo, base) => workspaces.record(sessionId, { ...base, repo }),
      log: (line) => logs.push(line),
      watch: { backoffMs: 50 },
    });
    env.spawner = createSpawner({
      config: { port: 1, workerUrl: "ws://127.0.0.1:1/agent/ws" },
      backend: env.backend,
      publishJobs: (jobs) => env.jobs = jobs,
      registerSession: () => {},
      repos: { cloneUrl: (repo) => `https://gitlab.example/${repo}.git`, credential: () => GITLAB_TOKEN },
      agentToken: (id) => Promise.resolve(`agent.${id}.${env.tokenSuffix}`),
      workspaces,
      containers,
    });
  };
  make();
  env.restart = async (o = {}) => {
    await env.spawner.shutdown();
    await env.backend.close();
    make();
    if (o.wait !== false) await env.spawner.recovered();
  };
  env.close = async () => {
    await env.spawner.shutdown();
    await env.backend.close();
    await fake.close();
  };
  return env;
}

const scheduled = { type: "PodScheduled", status: "True", lastTransitionTime: now() };
const cloning = () => ({
  phase: "Pending",
  conditions: [scheduled],
  initContainerStatuses: [{
    name: "clone",
    ready: false,
    restartCount: 0,
    image: "x",
    imageID: "",
    state: { running: { startedAt: now() } },
  }],
  containerStatuses: [{
    name: "worker",
    ready: false,
    restartCount: 0,
    image: "x",
    imageID: "",
    state: { waiting: { reason: "PodInitializing" } },
  }],
});
const cloned = (message: string, exitCode = 0) => ({
  name: "clone",
  ready: false,
  restartCount: 0,
  image: "x",
  imageID: "",
  state: {
    terminated: {
      exitCode,
      reason: exitCode ? "Error" : "Completed",
      message,
      startedAt: now(),
      finishedAt: now(),
    },
  },
});
const worker = (state: Record<string, unknown>) => ({
  name: "worker",
  ready: true,
  restartCount: 0,
  image: "x",
  imageID: "",
  state,
});
const running = (sessionId: string) => ({
  phase: "Running",
  conditions: [scheduled, { type: "Initialized", status: "True", lastTransitionTime: now() }],
  initContainerStatuses: [cloned(`lvmh: base main ${SHA} lvmh/${sessionId.replaceAll("-", "").slice(0, 8)}`)],
  containerStatuses: [worker({ running: { startedAt: now() } })],
});

/** The one job's state, and the Pod once the backend made it. */
const jobOf = (env: Env) => env.jobs[0];
const podMade = (env: Env) => waitFor(() => env.fake.list("pods").length > 0, "the Pod was created", 5000);
/** The spawn answers once the Pod is created; the job goes on to `running` (or `failed`) after. */
const settled = (env: Env, state: "running" | "failed") =>
  waitFor(() => jobOf(env)?.state === state, `the job ${state}`, 10_000);

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
    env.fake.setPodStatus(pod, { ...running(id), initContainerStatuses: [cloned("lvmh: kept")] });
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
    env.fake.setPodStatus(podName(id), {
      phase: "Failed",
      conditions: [scheduled],
      initContainerStatuses: [cloned("fatal: Remote branch nope not found", 1)],
      containerStatuses: [worker({ waiting: { reason: "PodInitializing" } })],
    });
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
    env.fake.setPodStatus(podName(jobOf(env).sessionId), {
      phase: "Pending",
      conditions: [scheduled],
      initContainerStatuses: [{
        name: "clone",
        ready: false,
        restartCount: 0,
        image: "x",
        imageID: "",
        state: {
          waiting: {
            reason: "ErrImagePull",
            message: 'pull access denied for "registry.example/lvmh-worker"',
          },
        },
      }],
    });
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
    env.fake.setPodStatus(podName(jobOf(env).sessionId), {
      phase: "Pending",
      conditions: [{
        type: "PodScheduled",
        status: "False",
        reason: "Unschedulable",
        message,
        lastTransitionTime: now(),
      }],
    });
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
    const spawned = env.spawner.spawn({ repo: "group/sub/proj" });
    await podMade(env);
    const id = jobOf(env).sessionId;
    env.fake.setPodStatus(podName(id), running(id));
    await spawned;
    await settled(env, "running");
    env.fake.setPodStatus(podName(id), {
      ...running(id),
      phase: "Failed",
      containerStatuses: [
        worker({ terminated: { exitCode: 137, reason: "OOMKilled", startedAt: now(), finishedAt: now() } }),
      ],
    });
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
    const spawned = env.spawner.spawn({ repo: "group/sub/proj" });
    await podMade(env);
    const id = jobOf(env).sessionId;
    env.fake.setPodStatus(podName(id), running(id));
    await spawned;
    await settled(env, "running");
    await env.spawner.stopSession(id);
    const before = env.fake.get("secrets", secretName(id))!;
    env.tokenSuffix = "rotated";
    const resumed = env.spawner.resume(id);
    await waitFor(() => env.fake.get("pods", podName(id)), "the resumed Pod", 5000);
    env.fake.setPodStatus(podName(id), { ...running(id), initContainerStatuses: [cloned("lvmh: kept")] });
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
