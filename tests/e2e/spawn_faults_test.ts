import assert from "node:assert/strict";
import { startDaemon } from "../../testing/daemon.ts";
import { dockerTest, uniq } from "../../testing/docker.ts";
import { post, startSpawnEnv } from "../../testing/spawn_env.ts";

Deno.test("spawn: bad repo paths and branches are 400 before anything runs", async () => {
  // The Docker socket does not exist: a 400 proves validation happened before any engine call (else 503).
  await using d = await startDaemon({
    env: { LVMH_CONTAINER_DOCKER_SOCK: `/tmp/lvmh-no-docker-${uniq()}.sock` },
  });
  const bad = [
    { repo: "../etc/passwd" },
    { repo: "group/../x" },
    { repo: "-group/project" },
    { repo: "group/-x" },
    { repo: "group/my project" },
    { repo: "group/p;rm -rf /" },
    { repo: "group/$(id)" },
    { repo: "group/`id`" },
    { repo: "https://evil.example/group/project" },
    { repo: "file:///etc" },
    { repo: "project" },
    { repo: "group/" + "x".repeat(300) },
    { repo: "group/project", branch: "--upload-pack=evil" },
    { repo: "group/project", branch: "a..b" },
    { repo: "group/project", branch: "main branch" },
    { repo: 42 },
    {},
  ];
  for (const body of bad) {
    const res = await post(d, "/api/spawn", body);
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.match((await res.json()).error, /repo|branch|expected/i);
  }
  const jobs = await (await d.api("/api/spawn/status")).json();
  assert.deepEqual(jobs, []);
});

Deno.test("spawn: Docker unreachable → the spawn routes answer 503, everything else works", async () => {
  const sock = `/tmp/lvmh-no-docker-${uniq()}.sock`;
  await using d = await startDaemon({ env: { LVMH_CONTAINER_DOCKER_SOCK: sock } });
  const res = await post(d, "/api/spawn", { repo: "group/project" });
  assert.equal(res.status, 503);
  assert.match(res.headers.get("content-type")!, /application\/json/);
  const { error } = await res.json();
  assert.match(error, /Docker/);
  assert.ok(error.includes(sock), error);
  const stop = await d.api("/api/sessions/some-session/container", { method: "DELETE" });
  assert.equal(stop.status, 503);
  await stop.body?.cancel();
  const sessions = await d.api("/api/sessions");
  assert.equal(sessions.status, 200);
  await sessions.body?.cancel();
  const status = await d.api("/api/spawn/status");
  assert.equal(status.status, 200);
  assert.deepEqual(await status.json(), []);
  const gitlab = await d.api("/api/gitlab/status");
  assert.equal(gitlab.status, 200);
  await gitlab.body?.cancel();
});

type Job = { repo: string; state: string; error: string | null; containerId: string | null };

dockerTest("spawn: a failed clone fails the job with git's message and leaves no container", async () => {
  const env = await startSpawnEnv();
  const { d, engine } = env;
  const missing = `group/missing-${uniq()}`;
  try {
    await post(d, "/api/gitlab/connect", { token: env.pat }).then((r) => r.body?.cancel());
    const res = await post(d, "/api/spawn", { repo: missing });
    assert.equal(res.status, 502);
    const { error } = await res.json();
    assert.match(error, /git .*failed.*(not found|404|does not appear)/i);
    const jobs = (await (await d.api("/api/spawn/status")).json()) as Job[];
    assert.equal(jobs[0].state, "failed");
    assert.equal(jobs[0].error, error);
    assert.equal(jobs[0].containerId, null);
    assert.deepEqual(await engine.containerList({ "lvmh.repo": missing }), []);
    assert.deepEqual(await engine.volumeList({ "lvmh.repo": missing, "lvmh.kind": "session" }), []);
    const sessions = (await (await d.api("/api/sessions")).json()) as unknown[];
    assert.equal(sessions.length, 0);
    const branch = await post(d, "/api/spawn", { repo: env.repos[0], branch: "no-such-branch" });
    assert.equal(branch.status, 502);
    assert.match((await branch.json()).error, /no-such-branch/);
  } finally {
    await cleanupRepo(engine, missing);
    await env.close();
  }
});

dockerTest("spawn: a failed image build fails the job with the engine's message", async () => {
  const id = uniq();
  const env = await startSpawnEnv({
    // Missing worker image + a base that is not local: the build must fail (no registry here).
    workerImage: `lvmh-test-nobuild-${id}:latest`,
    env: { LVMH_WORKER_BASE_IMAGE: `lvmh-missing-base-${id}:latest` },
  });
  const { d, engine } = env;
  try {
    const res = await post(d, "/api/spawn", { repo: env.repos[0] });
    assert.equal(res.status, 502);
    const { error } = await res.json();
    assert.match(error, /^Cannot build image "lvmh-test-nobuild-[^"]+": .*(registry|lvmh-missing-base)/);
    const jobs = (await (await d.api("/api/spawn/status")).json()) as Job[];
    assert.deepEqual([jobs[0].state, jobs[0].error], ["failed", error]);
    assert.deepEqual(await engine.containerList({ "lvmh.repo": env.repos[0] }), []);
    assert.equal(await engine.imageExists(`lvmh-test-nobuild-${id}:latest`), false);
  } finally {
    await env.close();
  }
});

async function cleanupRepo(
  engine: ReturnType<typeof import("../../testing/docker.ts").testEngine>,
  repo: string,
) {
  for (const v of await engine.volumeList({ "lvmh.repo": repo }).catch(() => [])) {
    await engine.volumeRemove(v, true).catch(() => {});
  }
}
