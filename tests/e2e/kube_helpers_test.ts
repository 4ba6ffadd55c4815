/**
 * The git helpers of a session spawned on Kubernetes, end to end: the real daemon against the fake API server
 * whose Docker kubelet runs each Pod on the test engine. The changes view, the bundle and the merge request
 * each run as short-lived helper Pods on the session's claim (on the worker's node while it runs), deleted
 * after; the push helper fetches the GitLab token and the bundle once from the daemon with a one-off token of
 * its own, so the token is in no object, env value or argument the API server saw.
 */
import assert from "node:assert/strict";
import { waitFor } from "../../testing/daemon.ts";
import { dockerTest } from "../../testing/docker.ts";
import { post } from "../../testing/spawn_env.ts";
import { startKubeSpawnEnv } from "../../testing/kube_env.ts";
import { agentDoes } from "../../testing/work_copy.ts";
import { git } from "../../testing/fixtures/git_http.ts";
import { NODE_NAME } from "../../testing/fixtures/kube_api.ts";
import { workspaceBranch } from "../../lib/workspaces.ts";
import type { Changes } from "../../lib/changes/types.ts";

type Pod = {
  metadata: { name: string; labels?: Record<string, string> };
  spec: {
    nodeName?: string;
    activeDeadlineSeconds?: number;
    containers: { command: string[]; env?: { name: string; value?: string }[] }[];
    volumes: { persistentVolumeClaim?: { claimName: string; readOnly?: boolean } }[];
  };
};

dockerTest("kubernetes: changes, bundle and merge request run as helper Pods on the claim", async (t) => {
  const s = await startKubeSpawnEnv();
  const { env, fake, engine, image } = s;
  const { d } = env;
  const repo = env.repos[0];
  const bare = `${env.gitRoot}/${repo}.git`;
  /** Helper Pods as they were created (the API server's record of each POST). */
  const helperPods = () =>
    fake.requests
      .filter((r) => r.method === "POST" && r.url.startsWith(`/api/v1/namespaces/${fake.namespace}/pods`))
      .map((r) => JSON.parse(r.body) as Pod)
      .filter((p) => p.metadata.labels?.["app.kubernetes.io/component"] === "helper");
  const noHelpersLeft = () =>
    waitFor(
      () =>
        fake.list("pods").every((p) =>
          (p.metadata.labels as Record<string, string> | undefined)?.["app.kubernetes.io/component"] !==
            "helper"
        ),
      "no helper Pod left",
      30_000,
    );
  try {
    const base = (await git(["--git-dir", bare, "rev-parse", "main"])).trim();
    const res = await post(d, "/api/spawn", { repo, ask: [] });
    const { sessionId } = await res.json();
    assert.equal(res.status, 201);
    await waitFor(
      async () => {
        const jobs = (await (await d.api("/api/spawn/status")).json()) as {
          sessionId: string;
          state: string;
        }[];
        const state = jobs.find((j) => j.sessionId === sessionId)?.state;
        if (state === "failed") throw new Error(`the spawn failed:\n${d.output()}`);
        return state === "running";
      },
      "the worker running",
      120_000,
    );
    const branch = workspaceBranch(sessionId);
    // The agent's hand in its working copy: a commit and an uncommitted file (the claim's `workspace/`).
    await agentDoes(
      engine,
      image,
      `lvmh-kube-pvc-lvmh-ws-${sessionId}`,
      "cd workspace; git -c safe.directory='*' config user.name agent; git config user.email a@a.invalid; " +
        "printf 'x\\n' > X.md; git add X.md; git commit -q -m 'agent: X'; printf 'y\\n' > Y.md",
    );

    await t.step("changes: a read-only helper Pod on the worker's node, deleted after", async () => {
      const r = await d.api(`/api/sessions/${sessionId}/changes`);
      const body = await r.json() as Changes;
      assert.equal(r.status, 200, JSON.stringify(body));
      assert.deepEqual(body.base, { branch: "main", sha: base });
      assert.deepEqual(body.files.map((f) => f.path), ["X.md", "Y.md"]);
      assert.deepEqual(body.commits.map((c) => c.title), ["agent: X"]);
      const pods = helperPods();
      assert.equal(pods.length, 1);
      const pod = pods[0];
      assert.equal(pod.metadata.labels?.["lvmh.dev/session"], sessionId);
      assert.equal(pod.spec.nodeName, NODE_NAME, "placed beside the running worker (ReadWriteOnce)");
      assert.ok((pod.spec.activeDeadlineSeconds ?? 0) > 0);
      const claim = pod.spec.volumes.find((v) => v.persistentVolumeClaim)?.persistentVolumeClaim;
      assert.deepEqual(claim, { claimName: `lvmh-ws-${sessionId}`, readOnly: true });
      await noHelpersLeft();
    });

    await t.step("bundle: the branch and the uncommitted file, made by a helper Pod", async () => {
      const r = await d.api(`/api/sessions/${sessionId}/bundle`);
      assert.equal(r.status, 200, r.status === 200 ? "" : await r.text());
      const tmp = await Deno.makeTempDir({ prefix: "lvmh-kube-bundle-" });
      try {
        await Deno.writeFile(`${tmp}/work.bundle`, new Uint8Array(await r.arrayBuffer()));
        await git(["clone", "-q", `${tmp}/work.bundle`, `${tmp}/clone`]);
        assert.equal(await Deno.readTextFile(`${tmp}/clone/X.md`), "x\n");
        assert.equal(await Deno.readTextFile(`${tmp}/clone/Y.md`), "y\n");
        assert.equal((await git(["-C", `${tmp}/clone`, "rev-parse", "HEAD~2"])).trim(), base);
      } finally {
        await Deno.remove(tmp, { recursive: true });
      }
      await noHelpersLeft();
    });

    await t.step("merge request: committed by a helper Pod, pushed by another with the token", async () => {
      const before = helperPods().length;
      const r = await post(d, `/api/sessions/${sessionId}/merge-request`, { title: "X and Y" });
      const body = await r.json();
      assert.equal(r.status, 201, `${JSON.stringify(body)}\n${d.output().slice(-3000)}`);
      assert.equal(body.mergeRequest.sourceBranch, branch);
      const head = (await git(["--git-dir", bare, "rev-parse", `refs/heads/${branch}`])).trim();
      assert.equal(body.mergeRequest.sha, head);
      assert.equal(
        await git(["--git-dir", bare, "log", "--format=%s", `${base}..${branch}`]),
        "X and Y\nagent: X\n",
      );
      assert.equal(env.gitlab.mergeRequests.length, 1);
      const made = helperPods().slice(before);
      const kinds = made.map((p) => p.metadata.labels?.["lvmh.dev/helper"]);
      assert.ok(kinds.includes("push"), kinds.join());
      const push = made.find((p) => p.metadata.labels?.["lvmh.dev/helper"] === "push")!;
      // The push sees no claim at all; the others are kept off the network by the NetworkPolicy's label.
      assert.ok(push.spec.volumes.every((v) => !v.persistentVolumeClaim));
      for (const p of made.filter((p) => p !== push)) {
        assert.equal(p.metadata.labels?.["lvmh.dev/network"], "none");
      }
      await noHelpersLeft();
      assert.deepEqual(
        fake.list("secrets").map((s) => s.metadata.name).filter((n) => n.startsWith("lvmh-h-")),
        [],
        "the helper's one-off token Secret is gone",
      );
    });

    await t.step("the GitLab token is in no request to the API server and not in the daemon's log", () => {
      for (const r of fake.requests) {
        assert.ok(!JSON.stringify(r).includes(env.pat), `${r.method} ${r.url} holds the GitLab token`);
      }
      assert.ok(!d.output().includes(env.pat), "the daemon's log holds the GitLab token");
    });
  } finally {
    await s.close();
  }
});
