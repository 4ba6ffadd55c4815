/**
 * Spawned sessions on Kubernetes, end to end: the real daemon (subprocess) with LVMH_SPAWN_BACKEND=kubernetes
 * against the fake API server (TLS, bearer token) whose "docker" kubelet really runs each Pod's containers on
 * the test engine: the init container clones from the GitLab fixture's git server with the credential it
 * fetched once from the daemon, the worker runs the real bridge and pi against the fake LLM. The states the
 * scripted kubelet reaches (image pull, unschedulable, OOM, broken watches, restart) are in
 * lib/spawn/kube_backend_test.ts.
 */
import assert from "node:assert/strict";
import { type Daemon, freePort, startDaemon, waitFor } from "../../testing/daemon.ts";
import { dockerTest } from "../../testing/docker.ts";
import { post } from "../../testing/spawn_env.ts";
import { startFakeKube } from "../../testing/fixtures/kube_api.ts";
import { startKubeSpawnEnv } from "../../testing/kube_env.ts";

type Session = { id: string; online: boolean; agent: boolean; repo: string | null; model: string | null };
type Job = { sessionId: string; state: string; error: string | null };
type Event = { type: string; message?: { role: string; text?: string } };

dockerTest(
  "kubernetes: spawn → hello → prompt → stop → resume → discard, with no GitLab token anywhere",
  async (t) => {
    const s = await startKubeSpawnEnv();
    const { d } = s.env;
    const repo = s.env.repos[0];
    let sessionId = "";
    try {
      await t.step(
        "spawn: 201 once the Pod is created, the clone made the session's branch, the plugin says hello",
        async () => {
          const res = await post(d, "/api/spawn", { repo, ask: [] });
          const body = await res.json();
          assert.equal(res.status, 201, JSON.stringify(body));
          sessionId = body.sessionId;
          assert.equal(body.containerId, `lvmh-w-${sessionId}`);
          // The answer came before the worker ran: the job is followed on /api/spawn/status.
          assert.notEqual((await s.jobs()).find((j) => j.sessionId === sessionId)?.state, "running");
          const online = await waitFor(
            async () => (await s.sessions()).find((x) => x.id === sessionId && x.online),
            "the worker's hello",
            120_000,
          ).catch((error) => {
            throw new Error(`${error.message}\ndaemon:\n${d.output()}`);
          });
          assert.equal(online.agent, true);
          assert.equal(online.repo, repo);
          await waitFor(
            async () => (await s.jobs()).find((j) => j.sessionId === sessionId)?.state === "running",
            "the job running",
            30_000,
          );
          const pod = s.fake.get("pods", `lvmh-w-${sessionId}`)!;
          const clone =
            (pod.status as { initContainerStatuses: { state: { terminated?: { message?: string } } }[] })
              .initContainerStatuses[0].state.terminated;
          const branch = `lvmh/${sessionId.replaceAll("-", "").slice(0, 8)}`;
          assert.match(clone?.message ?? "", new RegExp(`^lvmh: base main [0-9a-f]{40} ${branch}$`));
          // The one-shot credential is gone: asking again with the session's own token finds nothing.
          const secret = s.fake.get("secrets", `lvmh-s-${sessionId}`) as
            | { data: { token: string } }
            | undefined;
          const token = atob(secret!.data.token);
          const again = await fetch(`${d.url}/agent/clone-credential`, {
            headers: { authorization: `Bearer ${token}` },
          });
          assert.equal(again.status, 404, await again.text());
        },
      );

      await t.step("a prompt is answered by pi in the Pod", async () => {
        const res = await post(d, `/api/sessions/${sessionId}/prompt`, {
          message: "TEXTONLY hello from kubernetes",
        });
        assert.equal(res.status, 200, await res.text());
        await waitFor(
          async () => {
            const list = (await (await d.api(`/api/sessions/${sessionId}/events`)).json()) as Event[];
            return list.some((e) =>
              e.type === "message_end" &&
              e.message?.text?.includes("You said: TEXTONLY hello from kubernetes")
            );
          },
          "the answer",
          60_000,
        );
      });

      await t.step(
        "stop deletes the Pod and keeps claim and Secret; the session is stopped, not crashed",
        async () => {
          const res = await d.api(`/api/sessions/${sessionId}/container`, { method: "DELETE" });
          assert.equal(res.status, 200, await res.text());
          assert.equal(s.fake.get("pods", `lvmh-w-${sessionId}`), undefined);
          assert.ok(s.fake.get("persistentvolumeclaims", `lvmh-ws-${sessionId}`));
          assert.ok(s.fake.get("secrets", `lvmh-s-${sessionId}`));
          const row = await (await d.api(`/api/sessions/${sessionId}`)).json();
          assert.equal(row.container, "stopped");
          // The worker's last lines were read from pods/log before the Pod went, and are kept.
          const logs = await d.api(`/api/sessions/${sessionId}/container/logs?tail=50`);
          assert.equal(logs.status, 200);
          assert.match(await logs.text(), /lvmh-bridge: session .* ready/);
        },
      );

      await t.step("the daemon's watch relists after a 410 in either form", async () => {
        // Lists of lvmh's Pods (no `watch=`): the watch loop's, as nothing else lists while no job runs.
        const lists = () =>
          s.fake.requests.filter((r) =>
            r.method === "GET" && /\/pods\?/.test(r.url) && !/[?&]watch=/.test(r.url)
          )
            .length;
        const before = lists();
        s.fake.breakWatches("event");
        await waitFor(() => lists() > before, "a relist after the ERROR event with 410", 15_000);
        const mid = lists();
        s.fake.breakWatches("bare");
        await waitFor(() => lists() > mid, "a relist after the bare HTTP 410", 15_000);
      });

      await t.step("resume: a new Pod on the same claim, the same session back online", async () => {
        const claimUid = s.fake.get("persistentvolumeclaims", `lvmh-ws-${sessionId}`)!.metadata.uid;
        const resuming = post(d, `/api/sessions/${sessionId}/resume`, {});
        // The watch that follows the new Pod is cut without a word: it resumes from where it was.
        await waitFor(() => s.fake.get("pods", `lvmh-w-${sessionId}`), "the resumed Pod", 30_000);
        s.fake.breakWatches("drop");
        const res = await resuming;
        assert.equal(res.status, 202, await res.text());
        await waitFor(
          async () => (await s.sessions()).find((x) => x.id === sessionId && x.online),
          "the resumed worker's hello",
          120_000,
        );
        assert.equal(s.fake.get("persistentvolumeclaims", `lvmh-ws-${sessionId}`)!.metadata.uid, claimUid);
        const pod = s.fake.get("pods", `lvmh-w-${sessionId}`)!;
        const clone =
          (pod.status as { initContainerStatuses: { state: { terminated?: { message?: string } } }[] })
            .initContainerStatuses[0].state.terminated;
        assert.equal(clone?.message, "lvmh: kept", "the working copy was kept, not cloned again");
      });

      await t.step("discard deletes the claim and the Secret", async () => {
        await d.api(`/api/sessions/${sessionId}/container`, { method: "DELETE" }).then((r) =>
          r.body?.cancel()
        );
        const res = await d.api(`/api/sessions/${sessionId}`, { method: "DELETE" });
        assert.equal(res.status, 200, await res.text());
        await waitFor(
          () => !s.fake.get("persistentvolumeclaims", `lvmh-ws-${sessionId}`),
          "the claim deleted",
          30_000,
        );
        assert.equal(s.fake.get("secrets", `lvmh-s-${sessionId}`), undefined);
      });

      await t.step("the GitLab token is in no request to the API server and not in the daemon's log", () => {
        for (const r of s.fake.requests) {
          assert.ok(!JSON.stringify(r).includes(s.env.pat), `${r.method} ${r.url} holds the GitLab token`);
        }
        assert.ok(!d.output().includes(s.env.pat), "the daemon's log holds the GitLab token");
      });
    } finally {
      await s.close();
    }
  },
);

dockerTest("kubernetes: a clone of an unknown branch fails the spawn with git's own message", async () => {
  const s = await startKubeSpawnEnv();
  const { d } = s.env;
  try {
    const res = await post(d, "/api/spawn", { repo: s.env.repos[0], branch: "no-such-branch" });
    const body = await res.json();
    assert.equal(res.status, 201, JSON.stringify(body));
    const job = await waitFor(
      async () => (await s.jobs()).find((j) => j.sessionId === body.sessionId && j.state === "failed"),
      "the job failed",
      120_000,
    );
    assert.match(job.error ?? "", /clone failed: .*Remote branch no-such-branch not found/s);
    await waitFor(() => s.fake.list("persistentvolumeclaims").length === 0, "the claim removed", 30_000);
    assert.equal(s.fake.list("secrets").length, 0);
  } finally {
    await s.close();
  }
});

dockerTest("kubernetes: an image the node cannot pull fails the spawn with the kubelet's words", async () => {
  // Nothing is built: the configured image does not exist anywhere, as with a typo in LVMH_WORKER_IMAGE.
  const s = await startKubeSpawnEnv({}, { build: false });
  try {
    const res = await post(s.env.d, "/api/spawn", { repo: s.env.repos[0] });
    const body = await res.json();
    assert.equal(res.status, 201, JSON.stringify(body));
    const job = await waitFor(
      async () => (await s.jobs()).find((j) => j.sessionId === body.sessionId && j.state === "failed"),
      "the job failed",
      60_000,
    );
    assert.match(job.error ?? "", /^(ErrImagePull|ImagePullBackOff): /);
    await waitFor(() => s.fake.list("persistentvolumeclaims").length === 0, "the claim removed", 30_000);
    await waitFor(() => s.fake.list("pods").length === 0, "the Pod removed", 30_000);
  } finally {
    await s.close();
  }
});

dockerTest(
  "kubernetes: a daemon killed mid-spawn finds its Pod by label; the session comes online",
  async () => {
    const dataDir = await Deno.makeTempDir({ prefix: "lvmh-kube-restart-" });
    const port = freePort();
    let daemonEnv: Record<string, string> = {};
    const s = await startKubeSpawnEnv({}, {
      daemon: (env) => {
        daemonEnv = env;
        return startDaemon({ env, dataDir, port });
      },
    });
    let second: Daemon | null = null;
    try {
      const spawning = post(s.env.d, "/api/spawn", { repo: s.env.repos[0] }).catch(() => null);
      const pod = await waitFor(() => s.fake.list("pods")[0], "the Pod created", 30_000);
      await s.env.d.kill("SIGKILL");
      await spawning;
      const sessionId = (pod.metadata.labels as Record<string, string>)["lvmh.dev/session"];
      second = await startDaemon({ env: daemonEnv, dataDir, port });
      const d = second;
      await waitFor(
        async () =>
          ((await (await d.api("/api/sessions")).json()) as Session[]).find((x) =>
            x.id === sessionId && x.online
          ),
        "the session online with the restarted daemon",
        120_000,
      ).catch((error) => {
        throw new Error(`${error.message}\ndaemon:\n${d.output()}`);
      });
      const jobs = (await (await d.api("/api/spawn/status")).json()) as Job[];
      assert.deepEqual(jobs.map((j) => [j.sessionId, j.state]), [[sessionId, "running"]]);
      assert.equal(s.fake.list("pods").length, 1, "the same Pod, not a second one");
      assert.equal(s.fake.list("pods")[0].metadata.uid, pod.metadata.uid);
    } finally {
      await second?.stop();
      await s.close();
      await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    }
  },
);

// No Docker needed: nothing runs, the preflight refuses first.
Deno.test(
  "kubernetes: a missing permission → spawn answers 503 with the log's sentence; the rest works",
  async () => {
    const fake = await startFakeKube({ kubelet: "script" });
    fake.deny("create", "pods");
    const d = await startDaemon({
      env: {
        ...fake.daemonEnv(),
      },
    });
    try {
      const sentence = `Kubernetes: lvmh may not create pods in namespace "${fake.namespace}"`;
      await waitFor(() => d.output().includes(sentence), "the preflight's line in the log", 20_000);
      const res = await post(d, "/api/spawn", { repo: "group/project" });
      const body = await res.json();
      assert.equal(res.status, 503);
      assert.ok(body.error.startsWith(sentence), body.error);
      assert.equal((await d.api("/api/sessions")).status, 200);
      assert.equal(fake.list("pods").length, 0);
    } finally {
      await d.stop();
      await fake.close();
    }
  },
);
