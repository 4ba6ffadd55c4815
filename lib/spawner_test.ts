import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { createSpawner } from "./spawner.ts";
import { createDockerBackend, type DockerBackendConfig } from "./spawn/docker_backend.ts";
import { deferred, FakeEngine } from "./spawn/_fake_engine.ts";
import { ConflictError, NotFoundError, UnavailableError, UpstreamError } from "./errors.ts";
import type { AskSet, SessionInfo, SpawnJob } from "./protocol.ts";
import { workspaceBranch, Workspaces } from "./workspaces.ts";

const IMAGE = "lvmh-worker:test";
const CONFIG: DockerBackendConfig = {
  dockerSock: "/fake/docker.sock",
  workerImage: IMAGE,
  workerBaseImage: "node:22-bookworm-slim",
  workerNetwork: "host",
  workerLimits: { memoryBytes: null, cpus: null, pids: null },
  modelsJson: null,
  providerKey: null,
};

/** A spawner on a fake engine, with a tiny worker build context and recorders for what it publishes. */
async function setup() {
  const fake = new FakeEngine();
  // No lvmh label: an image lvmh did not build is used as it is (no build unless a test removes it).
  fake.images.set(IMAGE, null);
  const contextRoot = await Deno.makeTempDir({ prefix: "lvmh-spawner-test-" });
  await Deno.mkdir(`${contextRoot}/docker/bridge`, { recursive: true });
  await Deno.mkdir(`${contextRoot}/plugin`);
  await Deno.writeTextFile(`${contextRoot}/docker/worker.Dockerfile`, "FROM scratch\n");
  await Deno.writeTextFile(`${contextRoot}/docker/bridge/index.mjs`, "// bridge\n");
  await Deno.writeTextFile(`${contextRoot}/plugin/lvmh-agent.mjs`, "// plugin\n");
  const published: SpawnJob[][] = [];
  const registered: { info: SessionInfo; ask: AskSet | undefined }[] = [];
  const db = new DatabaseSync(":memory:");
  const workspaces = new Workspaces(db);
  const spawner = createSpawner({
    config: { port: 8686, workerUrl: null },
    backend: createDockerBackend(CONFIG, { engine: fake.engine(), contextRoot }),
    publishJobs: (jobs) => published.push(structuredClone(jobs)),
    registerSession(info, ask) {
      fake.log.push(`register ${info.id}`);
      registered.push({ info, ask });
    },
    repos: { cloneUrl: (repo) => `http://git.test/${repo}.git`, credential: () => null },
    agentToken: (sessionId) => Promise.resolve(`agent.${sessionId}.sig`),
    workspaces,
  });
  return {
    fake,
    spawner,
    workspaces,
    published,
    registered,
    /** The distinct states one job went through, in order. */
    states(jobId: string): string[] {
      const seen: string[] = [];
      for (const list of published) {
        const state = list.find((j) => j.id === jobId)?.state;
        if (state && seen.at(-1) !== state) seen.push(state);
      }
      return seen;
    },
    async [Symbol.asyncDispose]() {
      await spawner.shutdown();
      db.close();
      await Deno.remove(contextRoot, { recursive: true });
    },
  };
}

/** Wait until `check` holds, polling the event loop; fails after `ms`. */
async function until(check: () => boolean, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

Deno.test("spawner.spawn() runs a job to a started worker and lists the session before the ready marker", async () => {
  await using env = await setup();
  const { sessionId, containerId, jobId } = await env.spawner.spawn({ repo: "group/project", ask: ["bash"] });
  assert.deepEqual(env.states(jobId), ["queued", "starting", "cloning", "running"]);
  const worker = env.fake.containers.get(containerId)!;
  assert.equal(worker.state, "running");
  assert.deepEqual(worker.labels, {
    "lvmh.managed": "true",
    "lvmh.kind": "worker",
    "lvmh.session": sessionId,
    "lvmh.repo": "group/project",
  });
  const envVars = worker.body.Env as string[];
  assert.ok(
    envVars.includes(`LVMH_TOKEN=agent.${sessionId}.sig`),
    "the session-scoped token, not the daemon's",
  );
  assert.ok(envVars.includes("LVMH_URL=ws://127.0.0.1:8686/agent/ws"));
  assert.deepEqual(env.registered, [{
    info: {
      id: sessionId,
      name: null,
      cwd: "/workspace",
      model: null,
      provider: null,
      agent: true,
      repo: "group/project",
      startedAt: env.spawner.jobs()[0].createdAt,
    },
    ask: ["bash"],
  }]);
  // The bridge opens its session (and says hello) only once the marker is there: register must come first.
  const register = env.fake.log.indexOf(`register ${sessionId}`);
  const marker = env.fake.log.indexOf(`PUT /containers/${containerId}/archive`);
  assert.ok(register >= 0 && marker > register, env.fake.log.join("\n"));
  // The helpers are gone; the session's volumes stay for the running session.
  assert.deepEqual(env.fake.find({ "lvmh.kind": "clone" }), []);
  assert.deepEqual(env.fake.find({ "lvmh.kind": "copy" }), []);
  assert.ok(env.fake.volumes.has(`lvmh-sess-${sessionId}`));
  assert.deepEqual(env.fake.volumes.get(`lvmh-work-${sessionId}`), {
    "lvmh.managed": "true",
    "lvmh.repo": "group/project",
    "lvmh.session": sessionId,
    "lvmh.kind": "work",
  });
});

Deno.test("spawner.spawn() gives each session its own working copy on its own branch and records its base", async () => {
  await using env = await setup();
  const { sessionId, containerId } = await env.spawner.spawn({ repo: "group/project", branch: "dev" });
  const mounts = (env.fake.containers.get(containerId)!.body.HostConfig as { Mounts: unknown[] }).Mounts;
  assert.deepEqual(mounts, [
    { Type: "volume", Source: `lvmh-work-${sessionId}`, Target: "/workspace" },
    { Type: "volume", Source: `lvmh-sess-${sessionId}`, Target: "/pi-sessions" },
  ], "the worker mounts its own copy, not the repository cache");
  const branch = workspaceBranch(sessionId);
  assert.deepEqual(env.fake.copies, [{ volume: `lvmh-work-${sessionId}`, base: "dev", sha: "", branch }]);
  const helper = env.fake.log.filter((l) => l === "POST /containers/create").length;
  assert.equal(helper, 3, "worker, fetch helper, copy helper");
  assert.deepEqual(env.workspaces.get(sessionId), {
    sessionId,
    repo: "group/project",
    baseBranch: "dev",
    baseSha: env.fake.headSha,
    branch,
    createdAt: env.workspaces.get(sessionId)!.createdAt,
  });

  // Stopped: the working copy stays (resumable); discarded, it goes with the session storage; spawned again
  // under its id after the cache moved on: a new copy at the recorded base.
  await env.spawner.stopSession(sessionId);
  assert.ok(env.fake.volumes.has(`lvmh-work-${sessionId}`), "a stop keeps the working copy");
  await env.spawner.discard(sessionId);
  assert.ok(!env.fake.volumes.has(`lvmh-work-${sessionId}`), "a discard removes it");
  env.fake.headSha = "2".repeat(40);
  await env.spawner.spawn({ repo: "group/project" }, { sessionId });
  assert.deepEqual(env.fake.copies.at(-1), {
    volume: `lvmh-work-${sessionId}`,
    base: "dev",
    sha: "1".repeat(40),
    branch,
  });
  assert.equal(env.workspaces.get(sessionId)!.baseSha, "1".repeat(40), "the record never moves");

  // Another session of the same repository starts from the new head, in its own volume.
  const other = await env.spawner.spawn({ repo: "group/project" });
  assert.deepEqual(env.workspaces.get(other.sessionId)?.baseSha, "2".repeat(40));
  assert.equal(env.workspaces.get(other.sessionId)?.baseBranch, "main", "the default branch");
  assert.notEqual(workspaceBranch(other.sessionId), branch);
});

Deno.test("spawner.spawn() retries a start the engine failed with a 5xx once, on a fresh container", async (t) => {
  await t.step("one 500: the second container runs", async () => {
    await using env = await setup();
    env.fake.startFailures = [500];
    const { containerId, jobId } = await env.spawner.spawn({ repo: "group/project" });
    assert.equal(
      env.fake.log.filter((l) => l === "POST /containers/create").length,
      4,
      "worker twice, fetch, copy",
    );
    assert.deepEqual(env.fake.find({ "lvmh.kind": "worker" }).map((c) => c.id), [containerId]);
    assert.equal(env.states(jobId).at(-1), "running");
  });
  await t.step("two 500s: failed, and neither container nor session volumes are left", async () => {
    await using env = await setup();
    env.fake.startFailures = [500, 503];
    const error = await env.spawner.spawn({ repo: "group/project" }).catch((e) => e);
    assert.ok(error instanceof UpstreamError, String(error));
    assert.match(error.message, /^Cannot start container "[^"]+": daemon returned 503: OCI runtime/);
    assert.deepEqual(env.fake.find({ "lvmh.kind": "worker" }), []);
    assert.deepEqual([...env.fake.volumes.keys()].filter((v) => !v.startsWith("lvmh-repo-")), []);
    const [job] = env.spawner.jobs();
    assert.deepEqual([job.state, job.error, job.containerId], ["failed", error.message, null]);
    assert.deepEqual(env.registered, []);
  });
  await t.step("a 4xx is not retried", async () => {
    await using env = await setup();
    env.fake.startFailures = [400];
    await assert.rejects(() => env.spawner.spawn({ repo: "group/project" }), UpstreamError);
    const creates = env.fake.log.filter((l) => l === "POST /containers/create").length;
    assert.equal(creates, 3, "one worker, and the fetch and copy helpers that ran meanwhile");
  });
});

Deno.test("spawner.spawn() removes the started worker and the session's volumes when git fails", async () => {
  await using env = await setup();
  env.fake.cloneResult = { code: 128, stderr: "fatal: repository 'http://git.test/g/p.git/' not found\n" };
  const error = await env.spawner.spawn({ repo: "group/project" }).catch((e) => e);
  assert.ok(error instanceof UpstreamError);
  assert.match(error.message, /^git failed for http:\/\/git\.test\/group\/project\.git: fatal: repository/);
  assert.deepEqual([...env.fake.containers.values()], [], "no worker, no clone helper");
  assert.deepEqual([...env.fake.volumes.keys()].filter((v) => !v.startsWith("lvmh-repo-")), []);
  assert.ok(env.fake.volumes.size === 1, "the repo volume stays for the next try");
  const [job] = env.spawner.jobs();
  assert.equal(env.workspaces.get(job.sessionId), undefined, "nothing recorded");
  assert.deepEqual(env.registered, [], "a failed spawn lists no session");
  assert.equal(env.spawner.jobs()[0].state, "failed");
});

Deno.test("spawner.spawn() builds the image again when it vanished behind its back", async () => {
  await using env = await setup();
  await env.spawner.spawn({ repo: "group/project" });
  assert.equal(env.fake.builds, 0, "an existing foreign image is used as is");
  env.fake.images.delete(IMAGE);
  const error = await env.spawner.spawn({ repo: "group/project" }).catch((e) => e);
  assert.ok(error instanceof UpstreamError, String(error));
  assert.match(error.message, /No such image/);
  assert.equal(env.fake.builds, 0, "the image was checked once, before it vanished");
  const { jobId } = await env.spawner.spawn({ repo: "group/project" });
  assert.equal(env.fake.builds, 1);
  assert.deepEqual(env.states(jobId), ["queued", "building", "starting", "cloning", "running"]);
  assert.equal(env.fake.images.get(IMAGE)?.["lvmh.kind"], "worker-image", "built images carry their digest");
  assert.match(env.fake.images.get(IMAGE)?.["lvmh.context"] ?? "", /^[0-9a-f]{16}$/);
});

Deno.test("spawner.spawn() builds a missing image once for concurrent spawns, and all of them say so", async () => {
  await using env = await setup();
  env.fake.images.delete(IMAGE);
  const hold = deferred();
  env.fake.holdBuild = hold.promise;
  const spawns = ["g/a", "g/b", "g/c"].map((repo) => env.spawner.spawn({ repo }));
  await until(
    () => env.spawner.jobs().length === 3 && env.spawner.jobs().every((j) => j.state === "building"),
    "three building jobs",
  );
  hold.resolve();
  const results = await Promise.all(spawns);
  assert.equal(env.fake.builds, 1);
  for (const r of results) assert.equal(env.states(r.jobId).at(-1), "running");
});

Deno.test("spawner.spawn() clones one repository at a time, different repositories at once", async () => {
  await using env = await setup();
  const held = new Map<string, ReturnType<typeof deferred>>();
  const active = new Map<string, number>();
  let overlapSameVolume = false;
  env.fake.onClone = async (volume) => {
    active.set(volume, (active.get(volume) ?? 0) + 1);
    if (active.get(volume)! > 1) overlapSameVolume = true;
    const gate = deferred();
    held.set(`${volume}#${active.get(volume)}-${Math.random()}`, gate);
    await gate.promise;
    active.set(volume, active.get(volume)! - 1);
  };
  const spawns = [
    env.spawner.spawn({ repo: "g/same" }),
    env.spawner.spawn({ repo: "g/same" }),
    env.spawner.spawn({ repo: "g/other" }),
  ];
  // Two clones run at once (one per repository); the second of g/same waits for the first.
  await until(() => held.size === 2, "two clones in flight");
  const cloning = env.spawner.jobs().filter((j) => j.state === "cloning").map((j) => j.repo).sort();
  assert.deepEqual(cloning, ["g/other", "g/same"]);
  const releaseAll = () => {
    for (const [key, gate] of held) {
      held.delete(key);
      gate.resolve();
    }
  };
  releaseAll();
  await until(() => held.size === 1, "the second clone of g/same");
  releaseAll();
  await Promise.all(spawns);
  assert.equal(overlapSameVolume, false);
});

Deno.test("spawner.recover() lists the workers found by label and sweeps old clone helpers", async () => {
  const fake = new FakeEngine();
  const now = Math.floor(Date.now() / 1000);
  const worker = (session: string, state: "running" | "exited") => ({
    name: `lvmh-sess-${session}`,
    labels: { "lvmh.managed": "true", "lvmh.kind": "worker", "lvmh.session": session, "lvmh.repo": "g/p" },
    state,
    created: now - 60,
  });
  const running = fake.addContainer(worker("s-run", "running"));
  const exited = fake.addContainer(worker("s-exit", "exited"));
  const helper = (age: number) => ({
    name: `lvmh-clone-${age}`,
    labels: { "lvmh.managed": "true", "lvmh.kind": "clone", "lvmh.repo": "g/p" },
    state: "running" as const,
    created: now - age,
  });
  const stale = fake.addContainer(helper(3600));
  const recent = fake.addContainer(helper(10));
  fake.addContainer({ name: "unrelated", labels: { "lvmh.kind": "worker" }, state: "running", created: now });
  const spawner = createSpawner({
    config: { port: 8686, workerUrl: null },
    backend: createDockerBackend(CONFIG, { engine: fake.engine() }),
    publishJobs: () => {},
    registerSession: () => {},
    repos: { cloneUrl: (repo) => repo, credential: () => null },
    agentToken: (id) => Promise.resolve(id),
    workspaces: { record() {}, get: () => undefined },
  });
  await spawner.shutdown(); // waits for the recovery started at construction
  const jobs = spawner.jobs().map((j) => [j.sessionId, j.state, j.containerId, j.repo, j.createdAt]).sort();
  assert.deepEqual(jobs, [
    ["s-exit", "stopped", exited.id, "g/p", (now - 60) * 1000],
    ["s-run", "running", running.id, "g/p", (now - 60) * 1000],
  ]);
  assert.ok(!fake.containers.has(stale.id), "a helper older than 15 minutes is a crash leftover");
  assert.ok(fake.containers.has(recent.id), "a recent helper may be another daemon's clone in progress");
  await spawner.recover();
  assert.equal(spawner.jobs().length, 2, "a second recovery adds nothing");
});

Deno.test("spawner errors by kind: engine down → UnavailableError, no container → NotFoundError", async () => {
  await using env = await setup();
  await assert.rejects(() => env.spawner.stopSession("nobody"), NotFoundError);
  const { sessionId } = await env.spawner.spawn({ repo: "group/project" });
  await env.spawner.stopSession(sessionId);
  assert.deepEqual(env.fake.find({ "lvmh.session": sessionId }), []);
  assert.ok(env.fake.volumes.has(`lvmh-sess-${sessionId}`), "the session storage stays");
  assert.ok(env.fake.volumes.has(`lvmh-work-${sessionId}`), "the working copy stays");
  assert.equal(env.spawner.jobs()[0].state, "stopped");
  env.fake.down = true;
  const error = await env.spawner.spawn({ repo: "group/project" }).catch((e) => e);
  assert.ok(error instanceof UnavailableError);
  assert.match(error.message, /^Docker is unreachable: .*unix:\/\/\/fake\/docker\.sock/);
  assert.equal(env.spawner.jobs().length, 1, "no job for a spawn that never started");
  await assert.rejects(() => env.spawner.stopSession(sessionId), UnavailableError);
});

Deno.test("spawner.spawn() takes the session id its caller allocated, once per live job", async () => {
  await using env = await setup();
  await env.spawner.recovered();
  const { sessionId } = await env.spawner.spawn({ repo: "group/project" }, { sessionId: "pre-allocated-1" });
  assert.equal(sessionId, "pre-allocated-1");
  assert.equal(env.registered.at(-1)?.info.id, "pre-allocated-1");
  assert.equal(env.fake.find({ "lvmh.session": "pre-allocated-1" }).length, 1);
  await assert.rejects(
    () => env.spawner.spawn({ repo: "group/project" }, { sessionId: "pre-allocated-1" }),
    ConflictError,
  );
  assert.equal(env.fake.find({ "lvmh.session": "pre-allocated-1" }).length, 1, "no second worker");
  await env.spawner.stopSession("pre-allocated-1");
  const again = await env.spawner.spawn({ repo: "group/project" }, { sessionId: "pre-allocated-1" });
  assert.equal(again.sessionId, "pre-allocated-1", "a stopped session's id may be spawned again");
});
