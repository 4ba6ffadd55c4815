import assert from "node:assert/strict";
import { waitFor } from "../../testing/daemon.ts";
import { dockerTest } from "../../testing/docker.ts";
import { post, startSpawnEnv } from "../../testing/spawn_env.ts";
import { repoVolumeName } from "../../lib/spawn/docker_backend.ts";

dockerTest("spawn: three spawns of one repo at once share one clone and all succeed", async () => {
  const env = await startSpawnEnv();
  const { d, engine } = env;
  const repo = env.repos[0];
  try {
    await post(d, "/api/gitlab/connect", { token: env.pat }).then((r) => r.body?.cancel());
    const responses = await Promise.all([0, 1, 2].map(() => post(d, "/api/spawn", { repo })));
    const bodies = await Promise.all(responses.map((r) => r.json()));
    assert.deepEqual(responses.map((r) => r.status), [201, 201, 201], JSON.stringify(bodies));
    const ids = new Set(bodies.map((b) => b.sessionId));
    assert.equal(ids.size, 3);
    // One clone transferred objects; the two others found the clone and pulled nothing new.
    assert.equal(env.git.fetches, 1);
    const volumes = await engine.volumeList({ "lvmh.repo": repo, "lvmh.kind": "repo" });
    assert.deepEqual(volumes, [repoVolumeName(repo)]);
    const containers = await engine.containerList({ "lvmh.repo": repo, "lvmh.kind": "worker" });
    assert.equal(containers.length, 3);
    assert.ok(containers.every((c) => c.State === "running"));
    await waitFor(
      async () => {
        const list = (await (await d.api("/api/sessions")).json()) as { id: string; online: boolean }[];
        return list.filter((s) => ids.has(s.id) && s.online).length === 3;
      },
      "three sessions online",
      20_000,
    );
    const jobs = (await (await d.api("/api/spawn/status")).json()) as { state: string }[];
    assert.deepEqual(jobs.map((j) => j.state), ["running", "running", "running"]);
    // A worker that exits on its own (here: stopped behind the daemon's back) is reported as stopped.
    const gone = containers[0].Id;
    await engine.containerStop(gone, 5);
    await waitFor(
      async () => {
        const list = (await (await d.api("/api/spawn/status")).json()) as {
          state: string;
          containerId: string;
        }[];
        return list.find((j) => j.containerId === gone)?.state === "stopped";
      },
      "the exited worker's job to show stopped",
      15_000,
    );
  } finally {
    await env.close();
  }
  assert.deepEqual(await engine.containerList({ "lvmh.repo": repo }), []);
});
