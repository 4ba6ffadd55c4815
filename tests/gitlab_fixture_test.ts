// The loopback GitLab the ship tests push to, checked with the real git client: receive-pack needs the token
// as the HTTP basic password, and the merge request API answers as GitLab documents it.
import assert from "node:assert/strict";
import { createBareRepo, git, gitHttpHandler } from "../testing/fixtures/git_http.ts";
import { startGitlabFixture } from "../testing/fixtures/gitlab_fixture.ts";

Deno.test("gitlab fixture: git push with the token, refused without; merge requests as GitLab answers", async (t) => {
  const token = "glpat-fixture-test-token";
  const root = await Deno.makeTempDir({ prefix: "lvmh-gl-" });
  const work = await Deno.makeTempDir({ prefix: "lvmh-gl-work-" });
  const project = "group/sub/app";
  const gitHttp = gitHttpHandler({ root, password: token });
  const gl = startGitlabFixture({
    token,
    projects: [{ path: project, lastActivityAt: "2026-01-01T00:00:00Z" }],
    git: gitHttp.handle,
    gitRoot: root,
  });
  // The credential goes through a helper, as lvmh's push helper gives it: never in the URL.
  const cred = (password: string) => [
    "-c",
    "credential.helper=",
    "-c",
    `credential.helper=!f() { echo username=oauth2; echo password=${password}; }; f`,
  ];
  const env = { GIT_TERMINAL_PROMPT: "0", GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null" };
  const run = async (args: string[]) => {
    const out = await new Deno.Command("git", { args, env, stdout: "piped", stderr: "piped" }).output();
    return { ok: out.success, err: new TextDecoder().decode(out.stderr) };
  };
  const api = (path: string, init: RequestInit = {}) =>
    fetch(`${gl.url}/api/v4/projects/${encodeURIComponent(project)}${path}`, {
      ...init,
      headers: { "private-token": token, "content-type": "application/json" },
    });
  try {
    const base = await createBareRepo(root, project, { "README.md": "hello\n" });
    const remote = `${gl.url}/${project}.git`;
    await git(["clone", "-q", `${root}/${project}.git`, `${work}/c`]);
    await git(["-C", `${work}/c`, "checkout", "-q", "-b", "lvmh/abcd1234"]);
    await Deno.writeTextFile(`${work}/c/NEW.md`, "new\n");
    await git(["-C", `${work}/c`, "add", "-A"]);
    await git([
      "-C",
      `${work}/c`,
      "-c",
      "user.name=t",
      "-c",
      "user.email=t@t.invalid",
      "commit",
      "-q",
      "-m",
      "x",
    ]);
    const head = (await git(["-C", `${work}/c`, "rev-parse", "HEAD"])).trim();

    await t.step("a push without the token or with a wrong one is refused", async () => {
      const none = await run(["-C", `${work}/c`, "push", remote, "HEAD:refs/heads/lvmh/abcd1234"]);
      assert.ok(!none.ok);
      const wrong = await run([
        "-C",
        `${work}/c`,
        ...cred("nope"),
        "push",
        remote,
        "HEAD:refs/heads/lvmh/abcd1234",
      ]);
      assert.ok(!wrong.ok);
      assert.match(wrong.err, /Authentication failed|401|could not read/i);
      assert.equal(gitHttp.stats.pushes, 0);
      assert.equal(await git(["--git-dir", `${root}/${project}.git`, "branch", "--list", "lvmh/*"]), "");
    });

    await t.step("a push with the token creates the branch; a lease protects it", async () => {
      const ok = await run([
        "-C",
        `${work}/c`,
        ...cred(token),
        "push",
        "--force-with-lease=refs/heads/lvmh/abcd1234:",
        remote,
        "HEAD:refs/heads/lvmh/abcd1234",
      ]);
      assert.ok(ok.ok, ok.err);
      assert.equal(gitHttp.stats.pushes, 1);
      const pushed = await git([
        "--git-dir",
        `${root}/${project}.git`,
        "rev-parse",
        "refs/heads/lvmh/abcd1234",
      ]);
      assert.equal(pushed.trim(), head);
      // The branch exists now: a lease expecting it absent must fail.
      const stale = await run([
        "-C",
        `${work}/c`,
        ...cred(token),
        "push",
        "--force-with-lease=refs/heads/lvmh/abcd1234:",
        remote,
        `${base}:refs/heads/lvmh/abcd1234`,
      ]);
      assert.ok(!stale.ok);
      assert.match(stale.err, /stale info/);
    });

    let iid = 0;
    await t.step(
      "POST merge_requests: 201 with iid and web_url; a second one 409 with GitLab's message",
      async () => {
        const res = await api("/merge_requests", {
          method: "POST",
          body: JSON.stringify({
            source_branch: "lvmh/abcd1234",
            target_branch: "main",
            title: "Draft: add NEW",
          }),
        });
        assert.equal(res.status, 201);
        const mr = await res.json();
        iid = mr.iid;
        assert.equal(mr.iid, 1);
        assert.equal(mr.state, "opened");
        assert.equal(mr.draft, true);
        assert.equal(mr.sha, head);
        assert.equal(mr.source_branch, "lvmh/abcd1234");
        assert.equal(mr.target_branch, "main");
        assert.equal(mr.web_url, `${gl.url}/${project}/-/merge_requests/1`);
        const again = await api("/merge_requests", {
          method: "POST",
          body: JSON.stringify({ source_branch: "lvmh/abcd1234", target_branch: "main", title: "again" }),
        });
        assert.equal(again.status, 409);
        assert.deepEqual(await again.json(), {
          message: ["Another open merge request already exists for this source branch: !1"],
        });
        const noBranch = await api("/merge_requests", {
          method: "POST",
          body: JSON.stringify({ source_branch: "nope", target_branch: "main", title: "x" }),
        });
        assert.equal(noBranch.status, 422);
        await noBranch.body?.cancel();
      },
    );

    await t.step("GET by source branch, GET and PUT by iid; numeric project ids work too", async () => {
      const list = await (await api("/merge_requests?source_branch=lvmh/abcd1234&state=opened")).json();
      assert.deepEqual(list.map((m: { iid: number }) => m.iid), [iid]);
      const put = await api(`/merge_requests/${iid}`, {
        method: "PUT",
        body: JSON.stringify({ title: "add NEW", description: "why" }),
      });
      assert.equal(put.status, 200);
      const updated = await put.json();
      assert.equal(updated.title, "add NEW");
      assert.equal(updated.draft, false);
      const byId = await fetch(`${gl.url}/api/v4/projects/1000/merge_requests/${iid}`, {
        headers: { "private-token": token },
      });
      assert.equal((await byId.json()).description, "why");
      const unauthorized = await fetch(`${gl.url}/api/v4/projects/1000/merge_requests/${iid}`);
      assert.equal(unauthorized.status, 401);
      await unauthorized.body?.cancel();
    });
  } finally {
    await gl.close();
    await Deno.remove(root, { recursive: true });
    await Deno.remove(work, { recursive: true });
  }
});
