/**
 * `lvmh spawn` and `lvmh stop` against a real daemon, a real Docker engine, the GitLab fixture and the stub
 * worker image: the printed session id is a session that comes online with the asked-for ask set and branch,
 * and `stop` removes its container (a second stop is refused, exit 1).
 */
import assert from "node:assert/strict";
import { waitFor } from "../../testing/daemon.ts";
import { DockerNotFoundError } from "../../docker/errors.ts";
import { dockerTest } from "../../testing/docker.ts";
import { post, startSpawnEnv } from "../../testing/spawn_env.ts";
import { cliEnv, lvmh } from "../../testing/cli.ts";

const lines = (text: string) => text.split("\n").filter(Boolean).map((l) => JSON.parse(l));

dockerTest("cli: spawn GROUP/PROJECT --branch --ask, then stop, against a real engine", async () => {
  const env = await startSpawnEnv({ repoCount: 1 });
  const configDir = await Deno.makeTempDir({ prefix: "lvmh-cli-spawn-" });
  const { d, engine, pat } = env;
  try {
    const connected = await post(d, "/api/gitlab/connect", { token: pat });
    assert.equal(connected.status, 200);
    await connected.body?.cancel();
    const cli = cliEnv(configDir, d);
    const repo = env.repos[0];

    const spawned = await lvmh(cli, ["spawn", repo, "--branch", "main", "--ask", "bash,edit"]);
    assert.equal(spawned.code, 0, spawned.stderr);
    const sessionId = spawned.stdout.trim();
    assert.match(sessionId, /^[\w-]+$/, "the session id alone, for $(lvmh spawn …)");
    const session = await waitFor(
      async () => {
        const list = lines((await lvmh(cli, ["sessions", "--online", "--json"])).stdout);
        return list.find((s) => s.id === sessionId) ?? null;
      },
      "the spawned session online",
      30_000,
    );
    assert.equal(session.repo, repo);
    assert.deepEqual(session.ask, ["bash", "edit"]);
    const jobs = await (await d.api("/api/spawn/status")).json();
    const job = jobs.find((j: { sessionId: string }) => j.sessionId === sessionId);
    assert.equal(job.branch, "main");
    assert.equal(job.state, "running");

    const stopped = await lvmh(cli, ["stop", sessionId]);
    assert.equal(stopped.code, 0, stopped.stderr);
    await assert.rejects(() => engine.containerInspect(job.containerId), DockerNotFoundError);
    const again = await lvmh(cli, ["stop", sessionId]);
    assert.equal(again.code, 1, "nothing left to stop: the daemon's 404");
    assert.match(again.stderr, /^lvmh: /);
    const bad = await lvmh(cli, ["spawn", "../etc", "--branch", "main"]);
    assert.equal(bad.code, 1, bad.stderr);
  } finally {
    await env.close();
    await Deno.remove(configDir, { recursive: true });
  }
});
