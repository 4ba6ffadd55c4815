import assert from "node:assert/strict";
import { CACHE_DIR, copyWorkspace, fetchIntoCache } from "../../docker/clone.ts";
import { createBareRepo, git, serveGit } from "../../testing/fixtures/git_http.ts";
import {
  buildStubWorker,
  cleanupDocker,
  dockerTest,
  runOnce,
  testEngine,
  uniq,
} from "../../testing/docker.ts";

dockerTest(
  "fetchIntoCache(): a bare cache cloned with the token on stdin, then fetched; copyWorkspace(): offline",
  async (t) => {
    const engine = testEngine();
    const id = uniq();
    const image = `lvmh-test-worker-${id}:latest`;
    const repo = `group/clone-${id}`;
    const token = `glpat-${id}-secret-token`;
    const root = await Deno.makeTempDir({ prefix: "lvmh-git-" });
    const server = serveGit({ root, password: token });
    const volume = `lvmh-test-repo-${id}`;
    const work = `lvmh-test-work-${id}`;
    const labels = { "lvmh.managed": "true", "lvmh.repo": repo };
    const url = `${server.url}/${repo}.git`;
    const fetch = (o: { token: string | null; volume?: string }) =>
      fetchIntoCache(engine, {
        image,
        volume: o.volume ?? volume,
        url,
        token: o.token,
        network: "host",
        labels,
      });
    const copy = (o: { baseBranch?: string; baseSha?: string; volume?: string }) =>
      copyWorkspace(engine, {
        image,
        cacheVolume: volume,
        workVolume: o.volume ?? work,
        url,
        baseBranch: o.baseBranch ?? null,
        baseSha: o.baseSha ?? null,
        branch: "lvmh/0123abcd",
        labels,
      });
    const cache = `/workspace/${CACHE_DIR}`;
    try {
      await buildStubWorker(engine, image);
      const first = await createBareRepo(root, repo, { "README.md": "clone test\n", "src/a.txt": "a\n" });
      await engine.volumeCreate(volume, labels);
      await engine.volumeCreate(work, labels);

      await t.step(
        "first run clones a bare cache; the token reaches git but no file, env or URL",
        async () => {
          const result = await fetch({ token });
          assert.equal(result.action, "cloned");
          assert.equal(server.stats.fetches, 1);
          const look = await runOnce(engine, image, [
            "sh",
            "-c",
            `ls -A /workspace; stat -c '%u' ${cache}; git --git-dir=${cache} rev-parse main; ` +
            `git --git-dir=${cache} config --get core.bare; grep -r . ${cache}/config`,
          ], [{ volume, target: "/workspace" }]);
          assert.equal(look.code, 0, look.stderr);
          assert.ok(look.stdout.startsWith(`${CACHE_DIR}\n1000\n${first}\ntrue\n`), look.stdout);
          assert.ok(!look.stdout.includes(token), "token must not be in the cache's config");
          assert.deepEqual(await engine.containerList({ "lvmh.repo": repo, "lvmh.kind": "clone" }), []);
        },
      );

      let second = "";
      await t.step(
        "second run fetches a new commit into the cache, and no working tree appears",
        async () => {
          const tmp = await Deno.makeTempDir({ prefix: "lvmh-git-work-" });
          await git(["clone", "-q", `${root}/${repo}.git`, tmp]);
          await Deno.writeTextFile(`${tmp}/NEW.md`, "new\n");
          await git(["-C", tmp, "add", "-A"]);
          await git([
            "-C",
            tmp,
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t.invalid",
            "commit",
            "-q",
            "-m",
            "two",
          ]);
          await git(["-C", tmp, "push", "-q", "origin", "main", "main:dev"]);
          second = (await git(["-C", tmp, "rev-parse", "HEAD"])).trim();
          await Deno.remove(tmp, { recursive: true });
          const result = await fetch({ token });
          assert.equal(result.action, "fetched");
          const look = await runOnce(engine, image, [
            "sh",
            "-c",
            `ls -A /workspace; git --git-dir=${cache} rev-parse main dev`,
          ], [{ volume, target: "/workspace" }]);
          assert.equal(look.stdout, `${CACHE_DIR}\n${second}\n${second}\n`, look.stderr);
        },
      );

      await t.step(
        "the copy: offline, on the session's branch at the base's head, with no link to the cache",
        async () => {
          const made = await copy({ baseBranch: "main" });
          assert.deepEqual(made, { kept: false, baseBranch: "main", baseSha: second });
          const look = await runOnce(engine, image, [
            "sh",
            "-c",
            "cd /workspace && cat NEW.md && git symbolic-ref --short HEAD && git rev-parse HEAD && " +
            "git for-each-ref --format='%(refname)' refs/heads && git remote get-url origin && " +
            "stat -c '%u' .git && git status --porcelain && " +
            "test ! -e .git/objects/info/alternates && echo no-alternates",
          ], [{ volume: work, target: "/workspace" }]);
          assert.equal(
            look.stdout,
            `new\nlvmh/0123abcd\n${second}\nrefs/heads/lvmh/0123abcd\n${url}\n1000\nno-alternates\n`,
            look.stderr,
          );
          assert.deepEqual(await engine.containerList({ "lvmh.repo": repo, "lvmh.kind": "copy" }), []);
          assert.deepEqual(
            await copy({ baseBranch: "main", baseSha: second }),
            { kept: true },
            "a known copy stays",
          );
        },
      );

      await t.step("a copy at a recorded base and the default branch; an unknown branch fails", async () => {
        const other = `lvmh-test-work2-${id}`;
        await engine.volumeCreate(other, labels);
        try {
          assert.deepEqual(await copy({ volume: other, baseBranch: "main", baseSha: first }), {
            kept: false,
            baseBranch: "main",
            baseSha: first,
          });
          const fallback = await copy({ volume: `lvmh-test-work4-${id}` });
          assert.deepEqual(
            fallback,
            { kept: false, baseBranch: "main", baseSha: second },
            "the default branch",
          );
          const error = await copy({ volume: `lvmh-test-work3-${id}`, baseBranch: "no-such-branch" }).catch((
            e,
          ) => e);
          assert.match(String(error), /no-such-branch/);
        } finally {
          await engine.volumeRemove(other, true).catch(() => {});
          await engine.volumeRemove(`lvmh-test-work3-${id}`, true).catch(() => {});
          await engine.volumeRemove(`lvmh-test-work4-${id}`, true).catch(() => {});
        }
      });

      await t.step("a wrong token fails with git's message and leaves no helper behind", async () => {
        const other = `lvmh-test-repo2-${id}`;
        const error = await fetch({ token: "wrong-token", volume: other }).catch((e) => e);
        assert.ok(error instanceof Error);
        assert.match(error.message, /Authentication failed|could not read|403|401/i);
        assert.ok(!error.message.includes("wrong-token"));
        assert.deepEqual(await engine.containerList({ "lvmh.repo": repo, "lvmh.kind": "clone" }), []);
        await engine.volumeRemove(other, true).catch(() => {});
      });
    } finally {
      await server.close();
      await engine.volumeRemove(volume, true).catch(() => {});
      await engine.volumeRemove(work, true).catch(() => {});
      await cleanupDocker(engine, { repos: [repo], images: [image] });
      await Deno.remove(root, { recursive: true });
    }
  },
);
