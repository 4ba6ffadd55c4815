// POST/GET /api/sessions/:id/merge-request on the in-process daemon with the real engine, the worker-shaped
// stub image and the loopback GitLab: the session's working copy is a volume this test fills itself (as a
// spawn would), its record written through app.workspaces. The branch holds exactly the agent's commits on
// top of the base; a second call updates the same merge request; a secret stops everything before the push.
import assert from "node:assert/strict";
import { git } from "../../testing/fixtures/git_http.ts";
import { agentDoes } from "../../testing/work_copy.ts";
import { dockerTest } from "../../testing/docker.ts";
import { startShipEnv } from "../../testing/ship_env.ts";
import { cliEnv, lvmh } from "../../testing/cli.ts";
import { TEST_TOKEN } from "../../testing/daemon.ts";

dockerTest("merge request: create, update, refuse secrets; errors as documented", async (t) => {
  const env = await startShipEnv("mr");
  const { engine, image, project, token, bare, gitHttp, gl, sessionId, branch, volume, daemon } = env;
  const app = daemon.daemon.app;
  const post = (sid: string, body: unknown) =>
    daemon.api(`/api/sessions/${sid}/merge-request`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  const remoteHead = async () =>
    (await git(["--git-dir", bare, "for-each-ref", "--format=%(objectname)", `refs/heads/${branch}`])).trim();
  try {
    const base = await env.prepare({ "README.md": "hello\n", "src/a.txt": "a\n" });
    app.sessions.register({
      id: sessionId,
      name: null,
      cwd: "/workspace",
      model: null,
      provider: null,
      agent: true,
      repo: project,
      startedAt: Date.now(),
    });
    const terminal = crypto.randomUUID();
    app.sessions.register({
      id: terminal,
      name: null,
      cwd: "/tmp",
      model: null,
      provider: null,
      agent: false,
      repo: null,
      startedAt: Date.now(),
    });

    await t.step(
      "412 before GitLab is connected; 409 for a session with no working copy; 404 unknown",
      async () => {
        const res = await post(sessionId, { title: "x" });
        assert.equal(res.status, 412);
        assert.match((await res.json()).error, /GitLab is not connected/);
        await app.gitlab.connect(token);
        const terminalRes = await post(terminal, { title: "x" });
        assert.equal(terminalRes.status, 409);
        assert.match((await terminalRes.json()).error, /not a spawned session/);
        const unknown = await post(crypto.randomUUID(), { title: "x" });
        assert.equal(unknown.status, 404);
        await unknown.body?.cancel();
        const none = await daemon.api(`/api/sessions/${sessionId}/merge-request`);
        assert.equal(none.status, 404);
        await none.body?.cancel();
      },
    );

    await t.step("409 when nothing changed since the base", async () => {
      const res = await post(sessionId, { title: "nothing" });
      assert.equal(res.status, 409);
      assert.match((await res.json()).error, /Nothing to push/);
      assert.equal(gitHttp.stats.pushes, 0);
    });

    let iid = 0;
    let first = "";
    await t.step(
      "201: the branch holds the agent's commit and lvmh's on top of the base; the MR is open",
      async () => {
        await agentDoes(
          engine,
          image,
          volume,
          "printf 'agent\\n' >> src/a.txt; git add -A; git commit -q -m 'agent: edit a'; printf 'new\\n' > NEW.md",
        );
        const res = await post(sessionId, { title: "Add NEW", description: "made by an agent", draft: true });
        const body = await res.json();
        assert.equal(res.status, 201, JSON.stringify(body));
        first = await remoteHead();
        assert.deepEqual(body.mergeRequest, {
          iid: 1,
          webUrl: `${gl.url}/${project}/-/merge_requests/1`,
          state: "opened",
          sourceBranch: branch,
          targetBranch: "main",
          sha: first,
        });
        iid = body.mergeRequest.iid;
        assert.equal(
          await git(["--git-dir", bare, "log", "--format=%s|%an <%ae>", `${base}..${branch}`]),
          "Add NEW|Test User <tester@example.invalid>\nagent: edit a|agent <agent@agent.invalid>\n",
        );
        assert.equal((await git(["--git-dir", bare, "rev-parse", `${branch}~2`])).trim(), base);
        assert.equal((await git(["--git-dir", bare, "rev-parse", "main"])).trim(), base);
        assert.equal(gl.mergeRequests.length, 1);
        assert.equal(gl.mergeRequests[0].title, "Draft: Add NEW");
        assert.equal(gl.mergeRequests[0].description, "made by an agent");
        const got = await daemon.api(`/api/sessions/${sessionId}/merge-request`);
        const view = await got.json();
        assert.equal(got.status, 200);
        assert.equal(view.iid, iid);
        assert.equal(view.sha, first);
        assert.equal(view.state, "opened");
      },
    );

    await t.step("200: another change updates the same branch and merge request", async () => {
      await agentDoes(engine, image, volume, "printf 'more\\n' > MORE.md");
      const res = await post(sessionId, { title: "Add NEW and MORE" });
      const body = await res.json();
      assert.equal(res.status, 200, JSON.stringify(body));
      const second = await remoteHead();
      assert.notEqual(second, first);
      assert.equal((await git(["--git-dir", bare, "rev-parse", `${branch}~1`])).trim(), first);
      assert.equal(body.mergeRequest.iid, iid);
      assert.equal(body.mergeRequest.sha, second);
      assert.equal(gl.mergeRequests.length, 1);
      assert.equal(gl.mergeRequests[0].title, "Add NEW and MORE");
      // Called again with nothing new: the same merge request, nothing pushed.
      const pushes = gitHttp.stats.pushes;
      const again = await post(sessionId, { title: "Add NEW and MORE" });
      assert.equal(again.status, 200);
      assert.equal((await again.json()).mergeRequest.sha, second);
      assert.equal(gitHttp.stats.pushes, pushes);
    });

    await t.step("422: a secret in an added line names file:line and nothing reaches GitLab", async () => {
      const before = await remoteHead();
      const pushes = gitHttp.stats.pushes;
      const fake = "glpat-" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt";
      await agentDoes(engine, image, volume, 'printf "one\\nkey = %s\\n" "$1" > config.env', [fake]);
      const res = await post(sessionId, { title: "with a secret" });
      const body = await res.json();
      assert.equal(res.status, 422, JSON.stringify(body));
      assert.deepEqual(body.secrets, [{ file: "config.env", line: 2, kind: "GitLab token" }]);
      assert.match(body.error, /config\.env:2/);
      assert.ok(!JSON.stringify(body).includes(fake));
      assert.equal(await remoteHead(), before);
      assert.equal(gitHttp.stats.pushes, pushes);
      // Uncommitted: the agent can just remove it.
      const status = await agentDoes(engine, image, volume, "git status --porcelain");
      assert.match(status.stdout, /config\.env/);
      // Only an admin may override.
      const operator = await daemon.api("/api/tokens", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ name: `op-${sessionId.slice(0, 8)}`, role: "operator" }),
      });
      const opToken = (await operator.json()).token as string;
      const forbidden = await fetch(`${daemon.url}/api/sessions/${sessionId}/merge-request`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${opToken}` },
        body: JSON.stringify({ title: "with a secret", allowSecrets: true }),
      });
      assert.equal(forbidden.status, 403);
      await forbidden.body?.cancel();
      assert.equal(await remoteHead(), before);
    });

    await t.step("lvmh mr shows the merge request, and pushes new work with --title", async () => {
      const dir = await Deno.makeTempDir({ prefix: "lvmh-mr-cli-" });
      try {
        const cli = cliEnv(dir, { url: daemon.url, token: TEST_TOKEN });
        const shown = await lvmh(cli, ["mr", sessionId]);
        assert.equal(shown.code, 0, shown.stderr);
        assert.match(shown.stdout, new RegExp(`^!1 opened: ${branch} → main at [0-9a-f]{10}\n${gl.url}/`));
        // The secret from the step before is still there: refused, with the place named.
        const refused = await lvmh(cli, ["mr", sessionId, "--title", "again"]);
        assert.equal(refused.code, 1);
        assert.match(refused.stderr, /config\.env:2/);
        await agentDoes(engine, image, volume, "rm config.env; printf 'cli\\n' > CLI.md");
        const pushed = await lvmh(cli, ["mr", sessionId, "--title", "From the CLI", "--json"]);
        assert.equal(pushed.code, 0, pushed.stderr);
        const mr = JSON.parse(pushed.stdout);
        assert.equal(mr.iid, 1);
        assert.equal(mr.sha, await remoteHead());
        assert.equal(gl.mergeRequests[0].title, "From the CLI");
        assert.equal(await git(["--git-dir", bare, "show", `${branch}:CLI.md`]), "cli\n");
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    });

    await t.step("audited as merge_request.create and merge_request.update", async () => {
      const res = await daemon.api(`/api/audit?sessionId=${sessionId}`);
      const text = await res.text();
      assert.match(text, /merge_request\.create/);
      assert.match(text, /merge_request\.update/);
      assert.ok(!text.includes(token));
    });
  } finally {
    await env.close();
  }
});
