/**
 * The spawn job list with two daemon processes on one real PostgreSQL database (issue 23), both on the fake
 * Kubernetes API server (its scripted kubelet plays the Pods' lives). A spawn through A is listed by B's
 * `GET /api/spawn/status` and sent to B's browser (`spawn_status`) as its state moves to running; a GitLab
 * comment on B about the spawn's branch prompts A's session (B matched it by A's job, not another session
 * of the repository); a failed spawn's error shows on B; a spawn in progress when A is SIGKILLed is listed
 * failed on B, while a running one keeps its state.
 */
import assert from "node:assert/strict";
import { startPostgres } from "../../testing/postgres.ts";
import { type Daemon, waitFor } from "../../testing/daemon.ts";
import { connectAgent, connectBrowser, sessionInfo } from "../../testing/agent.ts";
import { startReplicas } from "../../testing/replicas.ts";
import { startFakeKube } from "../../testing/fixtures/kube_api.ts";
import { noteOnMergeRequest } from "../../testing/fixtures/gitlab_hooks/payloads.ts";
import { cloned, initializing, podStatus, running } from "../../lib/spawn/_kube_test_env.ts";
import { podName } from "../../lib/kube/objects.ts";
import type { SpawnJob } from "../../lib/protocol.ts";

/** Another replica's jobs are read every second; a replica is stale 10 s after its last beat. */
const SEEN_MS = 20_000;
const HOOK_SECRET = "gitlab-hook-secret-0123456789";

async function jobOn(d: Daemon, jobId: string): Promise<SpawnJob | undefined> {
  const res = await d.api("/api/spawn/status");
  assert.equal(res.status, 200);
  return (await res.json() as SpawnJob[]).find((j) => j.id === jobId);
}

async function spawnOn(
  d: Daemon,
  body: Record<string, unknown>,
): Promise<{ sessionId: string; jobId: string }> {
  const res = await d.api("/api/spawn", { method: "POST", body: JSON.stringify(body) });
  assert.equal(res.status, 201, await res.clone().text());
  return await res.json() as { sessionId: string; jobId: string };
}

Deno.test("replicas: every replica lists every spawn job, live, and hooks match them", async (t) => {
  await using pg = await startPostgres();
  const databaseUrl = await pg.newDatabase();
  const fake = await startFakeKube({ kubelet: "script", bookmarkMs: 200 });
  try {
    await using set = await startReplicas(2, {
      databaseUrl,
      env: { ...fake.daemonEnv(), LVMH_GITLAB_HOOK_SECRET: HOOK_SECRET },
    });
    const [a, b] = set.replicas.map((r) => r.daemon());

    let spawned = { sessionId: "", jobId: "" };
    await t.step("a spawn through A is listed on B, and B's browser sees it move to running", async () => {
      const browser = await connectBrowser(b.browserUrl);
      try {
        spawned = await spawnOn(a, { repo: "group/proj", branch: "feature/x" });
        const { sessionId: id, jobId } = spawned;
        const framed = (state: string) => (f: Record<string, unknown>) =>
          f.type === "spawn_status" &&
          (f.jobs as SpawnJob[]).some((j) => j.id === jobId && j.state === state);
        await waitFor(async () => (await jobOn(b, jobId)) !== undefined, "B lists A's job", SEEN_MS);
        const listed = (await jobOn(b, jobId))!;
        assert.equal(listed.sessionId, id);
        assert.equal(listed.repo, "group/proj");
        assert.equal(listed.branch, "feature/x");
        assert.notEqual(listed.state, "running", "the Pod does not run yet");

        fake.setPodStatus(podName(id), running(id));
        await waitFor(
          async () => (await jobOn(b, jobId))?.state === "running",
          "B lists it running",
          SEEN_MS,
        );
        await browser.waitFrame(framed("running"), "B's browser: a spawn_status with it running", SEEN_MS);
        assert.ok(
          browser.frames.some((f) =>
            f.type === "spawn_status" &&
            (f.jobs as SpawnJob[]).some((j) => j.id === jobId && j.state !== "running")
          ),
          "B's browser saw it before it ran too",
        );
        assert.equal((await jobOn(a, jobId))?.state, "running", "A lists it once, running");
        const onA = await (await a.api("/api/spawn/status")).json() as SpawnJob[];
        assert.equal(onA.filter((j) => j.sessionId === id).length, 1);
      } finally {
        await browser.close();
      }
    });

    await t.step("a GitLab comment on B about the spawn's branch prompts its session (A's)", async () => {
      const id = spawned.sessionId;
      const plugin = await connectAgent(a, { sessionId: id, session: sessionInfo(id) });
      // A terminal session on the same repository, listed first: without A's job, B would pick it (no branch).
      const decoyId = "00000000-0000-4000-8000-000000000000";
      const decoy = await connectAgent(a, {
        sessionId: decoyId,
        session: sessionInfo(decoyId, { repo: "git@gitlab.example:group/proj.git" }),
      });
      try {
        await waitFor(
          async () => {
            const rows = await (await b.api("/api/sessions")).json() as { id: string; online: boolean }[];
            return [id, decoyId].every((s) => rows.find((r) => r.id === s)?.online === true);
          },
          "B lists both sessions online",
          SEEN_MS,
        );
        const pods = fake.list("pods").length;
        const res = await fetch(`${set.replicas[1].url}/hooks/gitlab`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            "x-gitlab-event": "Note Hook",
            "x-gitlab-token": HOOK_SECRET,
          },
          body: JSON.stringify(noteOnMergeRequest("/lvmh please rename foo to bar")),
        });
        assert.equal(res.status, 202, await res.clone().text());
        await res.body?.cancel();
        const prompt = await plugin.waitFrame(
          (f) => f.type === "prompt",
          "the prompt at A's plugin",
          SEEN_MS,
        );
        assert.match(JSON.stringify(prompt), /rename foo to bar/);
        assert.ok(!decoy.frames.some((f) => f.type === "prompt"), "the other session of the repo got none");
        assert.equal(fake.list("pods").length, pods, "nothing spawned");
      } finally {
        await plugin.close();
        await decoy.close();
      }
    });

    await t.step("a failed spawn through A shows its error on B", async () => {
      const { sessionId: id, jobId } = await spawnOn(a, { repo: "group/proj", branch: "nope" });
      fake.setPodStatus(
        podName(id),
        podStatus({
          phase: "Failed",
          clone: cloned("fatal: Remote branch nope not found", 1),
          worker: initializing,
        }),
      );
      await waitFor(async () => (await jobOn(b, jobId))?.state === "failed", "B lists it failed", SEEN_MS);
      assert.match((await jobOn(b, jobId))!.error!, /^clone failed: fatal: Remote branch nope not found/);
    });

    await t.step("a spawn in progress when A is SIGKILLed is listed failed on B", async () => {
      const { jobId } = await spawnOn(a, { repo: "group/proj" });
      await waitFor(async () => (await jobOn(b, jobId)) !== undefined, "B lists A's job", SEEN_MS);
      assert.notEqual((await jobOn(b, jobId))!.state, "failed");
      await set.replicas[0].kill("SIGKILL");
      await waitFor(async () => (await jobOn(b, jobId))?.state === "failed", "B lists it failed", SEEN_MS);
      assert.equal((await jobOn(b, jobId))!.error, "replica r0 stopped before this spawn finished");
      assert.equal((await jobOn(b, spawned.jobId))?.state, "running", "a running job keeps its state");
    });
  } finally {
    await fake.close();
  }
});
