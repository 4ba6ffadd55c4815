// The merge request of a session spawned for real (daemon subprocess, the real engine, the stub worker image,
// the loopback GitLab): the working copy the spawn made is what gets pushed, to the session's own branch, on
// top of the base the spawn recorded; the token is in neither the worker's inspect nor the working copy.
import assert from "node:assert/strict";
import { git } from "../../testing/fixtures/git_http.ts";
import { dockerTest, runOnce } from "../../testing/docker.ts";
import { post, startSpawnEnv } from "../../testing/spawn_env.ts";
import { agentDoes } from "../../testing/work_copy.ts";
import { workspaceBranch, workVolumeName } from "../../lib/workspaces.ts";

dockerTest("merge request of a spawned session: its own branch, exactly its commits, no token", async (t) => {
  const env = await startSpawnEnv();
  const { d, engine, pat } = env;
  const repo = env.repos[0];
  const bare = `${env.gitRoot}/${repo}.git`;
  try {
    assert.equal((await post(d, "/api/gitlab/connect", { token: pat })).status, 200);
    const base = (await git(["--git-dir", bare, "rev-parse", "main"])).trim();
    const spawned = await post(d, "/api/spawn", { repo });
    const { sessionId, containerId } = await spawned.json();
    assert.equal(spawned.status, 201);
    const branch = workspaceBranch(sessionId);
    const volume = workVolumeName(sessionId);

    await t.step("nothing changed yet: 409", async () => {
      const res = await post(d, `/api/sessions/${sessionId}/merge-request`, { title: "nothing" });
      assert.equal(res.status, 409, await res.text());
    });

    await t.step(
      "the agent's commit and its uncommitted file become the branch and the merge request",
      async () => {
        await agentDoes(
          engine,
          env.image,
          volume,
          "git config user.name agent; git config user.email a@a.invalid; printf 'x\\n' > X.md; git add X.md; " +
            "git commit -q -m 'agent: X'; printf 'y\\n' > Y.md",
        );
        const res = await post(d, `/api/sessions/${sessionId}/merge-request`, { title: "X and Y" });
        const body = await res.json();
        assert.equal(res.status, 201, JSON.stringify(body));
        assert.equal(body.mergeRequest.sourceBranch, branch);
        assert.equal(body.mergeRequest.targetBranch, "main");
        const head = (await git(["--git-dir", bare, "rev-parse", `refs/heads/${branch}`])).trim();
        assert.equal(body.mergeRequest.sha, head);
        assert.equal(
          await git(["--git-dir", bare, "log", "--format=%s", `${base}..${branch}`]),
          "X and Y\nagent: X\n",
        );
        assert.equal((await git(["--git-dir", bare, "rev-parse", `${branch}~2`])).trim(), base);
        assert.equal((await git(["--git-dir", bare, "rev-parse", "main"])).trim(), base);
        assert.equal(env.gitlab.mergeRequests.length, 1);
        assert.equal(env.gitlab.mergeRequests[0].sourceBranch, branch);
      },
    );

    await t.step(
      "the token is in neither the worker's inspect nor any file of the working copy",
      async () => {
        const info = await engine.containerInspect(containerId);
        assert.ok(!JSON.stringify(info).includes(pat));
        const grep = await runOnce(engine, env.image, ["sh", "-c", `grep -rl "$0" /workspace || true`, pat], [
          {
            volume,
            target: "/workspace",
          },
        ]);
        assert.equal(grep.stdout, "");
        assert.equal(grep.code, 0, grep.stderr);
      },
    );
  } finally {
    await env.close();
  }
});
