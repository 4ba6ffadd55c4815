import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { createSpawner } from "../spawner.ts";
import { createDockerBackend } from "./docker_backend.ts";
import { FakeEngine } from "./_fake_engine.ts";
import { ContainerStates, lastLines, type WorkerEnd } from "./containers.ts";
import { StorageGoneError } from "./backend.ts";
import { ConflictError, NotFoundError } from "../errors.ts";
import type { AskSet, SessionInfo } from "../protocol.ts";
import { Workspaces } from "../workspaces.ts";

const IMAGE = "lvmh-worker:test";

/** A spawner on a fake engine with its worker states in `db` (a restart is a second spawner on it). */
function setup(fake = new FakeEngine(), db = new DatabaseSync(":memory:")) {
  fake.images.set(IMAGE, null);
  const changed: string[] = [];
  const crashes: { sessionId: string; end: WorkerEnd }[] = [];
  const registered: { info: SessionInfo; ask: AskSet | undefined }[] = [];
  const containers = new ContainerStates(db, (id) => changed.push(id));
  const spawner = createSpawner({
    config: { port: 8686, workerUrl: null },
    backend: createDockerBackend({
      dockerSock: "/fake/docker.sock",
      workerImage: IMAGE,
      workerBaseImage: "node:22-bookworm-slim",
      workerNetwork: "host",
      workerLimits: { memoryBytes: null, cpus: null, pids: null },
      modelsJson: null,
      providerKey: null,
    }, { engine: fake.engine() }),
    publishJobs: () => {},
    registerSession: (info, ask) => void registered.push({ info, ask }),
    repos: { cloneUrl: (repo) => `http://git.test/${repo}.git`, credential: () => null },
    agentToken: (sessionId) => Promise.resolve(`agent.${sessionId}.sig`),
    workspaces: new Workspaces(db),
    containers,
    onCrash: (sessionId, end) => crashes.push({ sessionId, end }),
  });
  return { fake, db, spawner, containers, changed, crashes, registered };
}

const worker = (fake: FakeEngine, sessionId: string) =>
  fake.find({ "lvmh.session": sessionId, "lvmh.kind": "worker" });

Deno.test("stop keeps the storage; resume starts a worker on it with no git and no new listing", async () => {
  const env = setup();
  try {
    await env.spawner.recovered();
    const { sessionId } = await env.spawner.spawn({ repo: "group/project", branch: "dev" });
    assert.equal(env.spawner.container(sessionId)?.state, "running");
    await env.spawner.stopSession(sessionId);
    assert.deepEqual(worker(env.fake, sessionId), []);
    assert.ok(
      env.fake.volumes.has(`lvmh-sess-${sessionId}`) && env.fake.volumes.has(`lvmh-work-${sessionId}`),
    );
    assert.equal(env.spawner.container(sessionId)?.state, "stopped");
    assert.match(await env.spawner.logs(sessionId, 10), /lvmh-bridge: session .* ready/, "its logs are kept");
    assert.ok(env.changed.includes(sessionId), "the list hears of it");

    const copies = env.fake.copies.length;
    const registered = env.registered.length;
    const { jobId, containerId } = await env.spawner.resume(sessionId);
    assert.equal(env.fake.copies.length, copies, "no git: the working copy is the session's");
    assert.equal(env.registered.length, registered, "the session keeps its row and ask set");
    assert.deepEqual(worker(env.fake, sessionId).map((c) => c.id), [containerId]);
    const job = env.spawner.jobs().find((j) => j.id === jobId)!;
    assert.deepEqual([job.state, job.sessionId, job.repo, job.branch], [
      "running",
      sessionId,
      "group/project",
      "dev",
    ]);
    assert.equal(env.spawner.container(sessionId)?.state, "running");
    await assert.rejects(() => env.spawner.resume(sessionId), ConflictError, "409 while it runs");
    await assert.rejects(() => env.spawner.discard(sessionId), ConflictError, "no discard while it runs");
    await assert.rejects(() => env.spawner.resume("never-spawned"), ConflictError);
  } finally {
    await env.spawner.shutdown();
  }
});

Deno.test("a worker that exits by itself is crashed (oom, exit N) with its logs; resume and discard", async () => {
  const env = setup();
  try {
    await env.spawner.recovered();
    const a = await env.spawner.spawn({ repo: "group/project" });
    const b = await env.spawner.spawn({ repo: "group/project" });
    const c = await env.spawner.spawn({ repo: "group/project" });
    env.fake.exit(a.containerId, 137, true);
    env.fake.exit(b.containerId, 1);
    env.fake.exit(c.containerId, 0);
    await env.spawner.check();
    const oom = env.spawner.container(a.sessionId)!;
    assert.deepEqual([oom.state, oom.exitCode, oom.reason], ["crashed", 137, "oom"]);
    const one = env.spawner.container(b.sessionId)!;
    assert.deepEqual([one.state, one.exitCode, one.reason], ["crashed", 1, "exit 1"]);
    assert.equal(env.spawner.container(c.sessionId)?.state, "stopped", "exit 0 is not a crash");
    assert.deepEqual(env.crashes.map((x) => x.sessionId).sort(), [a.sessionId, b.sessionId].sort());
    assert.deepEqual(worker(env.fake, a.sessionId), [], "the ended worker is removed");
    assert.match(await env.spawner.logs(a.sessionId, 100), /ready/, "its logs outlive it");

    await env.spawner.resume(a.sessionId);
    assert.equal(env.spawner.container(a.sessionId)?.state, "running");
    await assert.rejects(() => env.spawner.logs("nobody", 1), NotFoundError);

    await env.spawner.discard(b.sessionId);
    assert.equal(env.spawner.container(b.sessionId), undefined);
    assert.ok(
      !env.fake.volumes.has(`lvmh-sess-${b.sessionId}`) && !env.fake.volumes.has(`lvmh-work-${b.sessionId}`),
    );
    await env.spawner.discard("never-spawned"); // nothing to remove

    env.fake.volumes.delete(`lvmh-work-${c.sessionId}`);
    await assert.rejects(() => env.spawner.resume(c.sessionId), StorageGoneError);
  } finally {
    await env.spawner.shutdown();
  }
});

Deno.test("after a restart, a session whose worker is gone (or ended meanwhile) is stopped and resumable", async () => {
  const fake = new FakeEngine();
  const db = new DatabaseSync(":memory:");
  const first = setup(fake, db);
  await first.spawner.recovered();
  const gone = await first.spawner.spawn({ repo: "group/project" });
  const ended = await first.spawner.spawn({ repo: "group/project" });
  const alive = await first.spawner.spawn({ repo: "group/project" });
  await first.spawner.shutdown();
  fake.containers.delete(gone.containerId); // the engine restarted, or someone removed it
  fake.exit(ended.containerId, 143);

  const second = setup(fake, db);
  try {
    await second.spawner.recovered();
    assert.equal(second.spawner.container(gone.sessionId)?.state, "stopped");
    assert.equal(second.spawner.container(ended.sessionId)?.state, "stopped");
    assert.match(await second.spawner.logs(ended.sessionId, 5), /ready/);
    assert.deepEqual(worker(fake, ended.sessionId), []);
    assert.equal(second.spawner.container(alive.sessionId)?.state, "running");
    await second.spawner.resume(gone.sessionId);
    assert.equal(second.spawner.container(gone.sessionId)?.state, "running");
  } finally {
    await second.spawner.shutdown();
  }
});

Deno.test("lastLines() keeps the last n lines", () => {
  assert.equal(lastLines("a\nb\nc\n", 2), "b\nc\n");
  assert.equal(lastLines("a\nb\nc", 5), "a\nb\nc\n");
  assert.equal(lastLines("", 5), "");
});

Deno.test("a daemon that started without Docker settles its sessions once the engine answers", async () => {
  const fake = new FakeEngine();
  const db = new DatabaseSync(":memory:");
  const first = setup(fake, db);
  await first.spawner.recovered();
  const gone = await first.spawner.spawn({ repo: "group/project" });
  await first.spawner.shutdown();
  fake.containers.delete(gone.containerId);
  fake.down = true;
  const second = setup(fake, db);
  try {
    await second.spawner.recovered();
    assert.equal(second.spawner.container(gone.sessionId)?.state, "running", "nothing known yet");
    fake.down = false;
    await second.spawner.check();
    assert.equal(second.spawner.container(gone.sessionId)?.state, "stopped");
  } finally {
    await second.spawner.shutdown();
  }
});
