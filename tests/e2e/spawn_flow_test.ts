import assert from "node:assert/strict";
import { startDaemon, waitFor } from "../../testing/daemon.ts";
import { DockerNotFoundError } from "../../docker/errors.ts";
import { connectBrowser } from "../../testing/agent.ts";
import { agentToken } from "../../lib/auth.ts";
import { DOCKER_SOCK, dockerTest } from "../../testing/docker.ts";
import { post, startSpawnEnv } from "../../testing/spawn_env.ts";

type Job = {
  repo: string;
  state: string;
  sessionId: string;
  containerId: string | null;
  error: string | null;
};
type Session =
  & { id: string; online: boolean; agent: boolean; repo: string | null; name: string | null }
  & Record<
    string,
    unknown
  >;

dockerTest("spawn: connect GitLab, list repos, spawn, prompt, stop (stub bridge)", async (t) => {
  const env = await startSpawnEnv({
    repoCount: 3,
    env: { LVMH_WORKER_MEMORY: "512m", LVMH_WORKER_CPUS: "1", LVMH_WORKER_PIDS: "512" },
  });
  const { d, engine, pat } = env;
  const browser = await connectBrowser(d.browserUrl);
  const repo = env.repos[0];
  const sessions = async () => (await (await d.api("/api/sessions")).json()) as Session[];
  try {
    await t.step("GitLab: a wrong token is refused, the right one stored and never returned", async () => {
      const bad = await post(d, "/api/gitlab/connect", { token: "glpat-wrong-token" });
      assert.equal(bad.status, 400);
      assert.match((await bad.json()).error, /rejected/);
      assert.equal((await (await d.api("/api/gitlab/status")).json()).connected, false);
      const ok = await post(d, "/api/gitlab/connect", { token: pat });
      assert.equal(ok.status, 200);
      assert.deepEqual(await ok.json(), { username: "alice" });
      const status = await d.api("/api/gitlab/status");
      const text = await status.text();
      assert.deepEqual(JSON.parse(text), { connected: true, baseUrl: env.gitlab.url, username: "alice" });
      assert.ok(!text.includes(pat));
    });

    await t.step("GitLab: repos across pages, most recent activity first", async () => {
      const res = await d.api("/api/gitlab/repos");
      assert.equal(res.status, 200);
      const text = await res.text();
      const list = JSON.parse(text);
      assert.deepEqual(list.map((r: { path: string }) => r.path), [...env.repos].reverse());
      assert.equal(list[0].namespace, "group/sub");
      assert.equal(list[0].defaultBranch, "main");
      assert.ok(!text.includes(pat));
      // maxPerPage 2 with 3 projects: two pages were read
      assert.equal(env.gitlab.requests.filter((r) => r.path.startsWith("/api/v4/projects")).length, 2);
    });

    let sessionId = "";
    let containerId = "";
    await t.step(
      "spawn answers with the session and container; the session is listed as an agent",
      async () => {
        const res = await post(d, "/api/spawn", { repo });
        const body = await res.json();
        assert.equal(res.status, 201, JSON.stringify(body));
        assert.match(res.headers.get("content-type")!, /application\/json/);
        ({ sessionId, containerId } = body);
        assert.ok(sessionId && containerId);
        const s = (await sessions()).find((x) => x.id === sessionId);
        assert.ok(s, "pre-registered before hello");
        assert.equal(s.agent, true);
        assert.equal(s.repo, repo);
      },
    );

    await t.step(
      "the bridge says hello from the cloned repo, as uid 1000, with models.json mounted",
      async () => {
        const s = await waitFor(
          async () => (await sessions()).find((x) => x.id === sessionId && x.online),
          "online",
          20_000,
        );
        assert.equal(s.name, `readme of ${repo}`);
        assert.equal(s.agent, true);
        assert.equal(s.repo, repo);
        assert.equal(s.cwd, "/workspace");
        assert.equal(s.stubUid, 1000);
        assert.equal(s.stubModels, "/etc/lvmh/models.json");
      },
    );

    await t.step("the container carries the contract and the limits, and not the GitLab token", async () => {
      const info = await engine.containerInspect(containerId);
      const envs = info.Config.Env ?? [];
      assert.ok(envs.includes(`LVMH_SESSION_ID=${sessionId}`));
      assert.ok(envs.includes(`LVMH_REPO=${repo}`));
      assert.ok(envs.includes("LVMH_AGENT=1"));
      assert.ok(envs.some((e) => e.startsWith("LVMH_URL=ws://127.0.0.1:")));
      assert.ok(!JSON.stringify(info).includes(pat), "the PAT must not be in docker inspect");
      assert.ok(!JSON.stringify(info).includes(d.token), "nor the daemon's own token");
      assert.ok(
        envs.includes(`LVMH_TOKEN=${await agentToken(d.token, sessionId)}`),
        "a token for this session only",
      );
      assert.equal(info.HostConfig.NetworkMode, "host");
      assert.equal(info.HostConfig.Init, true);
      assert.equal(info.HostConfig.Memory, 512 * 1024 ** 2, "LVMH_WORKER_MEMORY");
      assert.equal(info.HostConfig.NanoCpus, 1e9, "LVMH_WORKER_CPUS");
      assert.equal(info.HostConfig.PidsLimit, 512, "LVMH_WORKER_PIDS");
      assert.equal(info.Config.Labels["lvmh.session"], sessionId);
      assert.equal(info.Config.Labels["lvmh.managed"], "true");
    });

    await t.step("status and spawn_status frames show the job's steps", async () => {
      const jobs = (await (await d.api("/api/spawn/status")).json()) as Job[];
      const job = jobs.find((j) => j.sessionId === sessionId)!;
      assert.equal(job.state, "running");
      assert.equal(job.containerId, containerId);
      const states = browser.frames.filter((f) => f.type === "spawn_status")
        .map((f) => (f.jobs as Job[]).find((j) => j.sessionId === sessionId)?.state).filter(Boolean);
      for (const s of ["queued", "cloning", "starting", "running"]) {
        assert.ok(states.includes(s), `${s} in ${states}`);
      }
    });

    await t.step("a prompt through REST is answered", async () => {
      const res = await post(d, `/api/sessions/${sessionId}/prompt`, { message: "hello container" });
      assert.equal(res.status, 200);
      await res.body?.cancel();
      await waitFor(
        async () => {
          const events = await (await d.api(`/api/sessions/${sessionId}/events`)).json();
          return events.some((e: { type: string; message?: { text: string } }) =>
            e.type === "message_end" && e.message?.text === "echo: hello container"
          );
        },
        "the answer",
        10_000,
      );
    });

    let current = d;
    await t.step("restart: a new daemon finds the container again by label", async () => {
      await d.kill("SIGTERM");
      current = await startDaemon({
        dataDir: d.dataDir,
        port: d.port,
        env: {
          LVMH_CONTAINER_DOCKER_SOCK: DOCKER_SOCK!,
          LVMH_GITLAB_URL: env.gitlab.url,
          LVMH_WORKER_IMAGE: env.image,
        },
      });
      const jobs = await waitFor(async () => {
        const list = (await (await current.api("/api/spawn/status")).json()) as Job[];
        return list.find((j) => j.sessionId === sessionId) ? list : null;
      }, "the recovered job");
      const job = jobs.find((j) => j.sessionId === sessionId)!;
      assert.deepEqual([job.state, job.containerId, job.repo], ["running", containerId, repo]);
      assert.equal((await (await current.api("/api/gitlab/status")).json()).connected, true);
      // The bridge dials again and the session comes back online.
      await waitFor(
        async () => {
          const list = (await (await current.api("/api/sessions")).json()) as Session[];
          return list.find((x) => x.id === sessionId && x.online);
        },
        "online again",
        10_000,
      );
    });

    await t.step(
      "DELETE container stops and removes it, keeping its storage; the session goes offline",
      async () => {
        const res = await current.api(`/api/sessions/${sessionId}/container`, { method: "DELETE" });
        assert.equal(res.status, 200);
        assert.deepEqual(await res.json(), { ok: true });
        await assert.rejects(() => engine.containerInspect(containerId), DockerNotFoundError);
        // Its storage stays (the session is stopped, resumable) until it is discarded.
        assert.deepEqual((await engine.volumeList({ "lvmh.session": sessionId })).sort(), [
          `lvmh-sess-${sessionId}`,
          `lvmh-work-${sessionId}`,
        ]);
        await waitFor(async () => {
          const list = (await (await current.api("/api/sessions")).json()) as Session[];
          return list.find((x) => x.id === sessionId && !x.online);
        }, "offline");
        const jobs = (await (await current.api("/api/spawn/status")).json()) as Job[];
        assert.equal(jobs.find((j) => j.sessionId === sessionId)!.state, "stopped");
        const again = await current.api(`/api/sessions/${sessionId}/container`, { method: "DELETE" });
        assert.equal(again.status, 404);
        await again.body?.cancel();
        const bad = await current.api(`/api/sessions/${encodeURIComponent("../x")}/container`, {
          method: "DELETE",
        });
        assert.ok(bad.status === 400 || bad.status === 404);
        await bad.body?.cancel();
      },
    );

    await t.step("disconnect forgets the token", async () => {
      const res = await current.api("/api/gitlab/connect", { method: "DELETE" });
      assert.equal(res.status, 200);
      await res.body?.cancel();
      assert.equal((await (await current.api("/api/gitlab/status")).json()).connected, false);
      const repos = await current.api("/api/gitlab/repos");
      assert.equal(repos.status, 409);
      await repos.body?.cancel();
      await current.stop();
    });
  } finally {
    await browser.close();
    await env.close();
  }
});
