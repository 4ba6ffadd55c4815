/**
 * The host's engine restarts under a running spawned session (the stub worker on the real engine): Docker stops
 * its containers as a host shutdown does and comes back on the same data. The session is `stopped`, never
 * lost: its storage (with a file the agent wrote) is still there, and a resume brings the same session back
 * online on it.
 *
 * This restarts the test engine itself (`scripts/dockerd.sh restart`, keeping images, volumes and callers),
 * which the serial end-to-end phase of the test command allows.
 */
import assert from "node:assert/strict";
import { waitFor } from "../../testing/daemon.ts";
import { DOCKER_SOCK, dockerTest, ROOT, runOnce } from "../../testing/docker.ts";
import { post, startSpawnEnv } from "../../testing/spawn_env.ts";

type Session = { id: string; online: boolean; container: string | null };

dockerTest("the engine restarts under a running session: stopped, its work kept, resumable", async () => {
  const env = await startSpawnEnv();
  const { d, engine } = env;
  try {
    await post(d, "/api/gitlab/connect", { token: env.pat }).then((r) => r.body?.cancel());
    const spawned = await (await post(d, "/api/spawn", { repo: env.repos[0], ask: [] })).json();
    const id = spawned.sessionId as string;
    const session = async () =>
      ((await (await d.api("/api/sessions")).json()) as Session[]).find((s) => s.id === id)!;
    await waitFor(async () => (await session())?.online, "the hello", 60_000);
    assert.equal((await session()).container, "running");

    // The agent's work: a file in its working copy, uncommitted.
    const workVolume = `lvmh-work-${id}`;
    const wrote = await runOnce(engine, env.image, ["sh", "-c", "echo kept > /workspace/agent-note.txt"], [
      { volume: workVolume, target: "/workspace" },
    ]);
    assert.equal(wrote.code, 0, wrote.stderr);

    const restart = await new Deno.Command("bash", {
      args: [`${ROOT}scripts/dockerd.sh`, "restart"],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const restartLog = new TextDecoder().decode(restart.stderr);
    assert.ok(restart.success, `dockerd.sh restart failed: ${restartLog}`);
    assert.equal(new TextDecoder().decode(restart.stdout).trim(), DOCKER_SOCK, "the same engine came back");

    const stopped = await waitFor(
      async () => {
        const s = await session();
        return s.container !== "running" && !s.online ? s : null;
      },
      "the session seen stopped",
      30_000,
    );
    assert.equal(stopped.container, "stopped", "an engine restart is not the agent's crash");
    assert.deepEqual(
      (await engine.containerList({ "lvmh.session": id, "lvmh.kind": "worker" })).filter((c) =>
        c.State === "running"
      ),
      [],
    );

    const resumed = await post(d, `/api/sessions/${id}/resume`, {});
    const body = await resumed.json();
    assert.equal(resumed.status, 202, JSON.stringify(body));
    assert.equal(typeof body.jobId, "string");
    const back = await waitFor(
      async () => {
        const s = await session();
        return s.online && s.container === "running" ? s : null;
      },
      "the same session online again",
      60_000,
    );
    assert.equal(back.id, id);
    const read = await runOnce(engine, env.image, ["cat", "/workspace/agent-note.txt"], [
      { volume: workVolume, target: "/workspace" },
    ]);
    assert.equal(read.stdout.trim(), "kept", "the working copy survived the restart");
  } finally {
    await env.close();
  }
});
