import assert from "node:assert/strict";
import { cloneIntoVolume } from "../../docker/clone.ts";
import { createBareRepo, git, serveGit } from "../../testing/fixtures/git_http.ts";
import {
  buildStubWorker,
  cleanupDocker,
  dockerTest,
  runOnce,
  testEngine,
  uniq,
} from "../../testing/docker.ts";

dockerTest("cloneIntoVolume() clones with the token on stdin, then pulls", async (t) => {
  const engine = testEngine();
  const id = uniq();
  const image = `lvmh-test-worker-${id}:latest`;
  const repo = `group/clone-${id}`;
  const token = `glpat-${id}-secret-token`;
  const root = await Deno.makeTempDir({ prefix: "lvmh-git-" });
  const server = serveGit({ root, password: token });
  const volume = `lvmh-test-repo-${id}`;
  const labels = { "lvmh.managed": "true", "lvmh.repo": repo };
  const clone = (o: { token: string | null; volume?: string; branch?: string }) =>
    cloneIntoVolume(engine, {
      image,
      volume: o.volume ?? volume,
      url: `${server.url}/${repo}.git`,
      branch: o.branch ?? null,
      token: o.token,
      network: "host",
      labels,
    });
  try {
    await buildStubWorker(engine, image);
    await createBareRepo(root, repo, { "README.md": "clone test\n", "src/a.txt": "a\n" });
    await engine.volumeCreate(volume, labels);

    await t.step("first run clones; the token reaches git but no file, env or URL", async () => {
      const result = await clone({ token });
      assert.equal(result.action, "cloned");
      assert.equal(server.stats.fetches, 1);
      const look = await runOnce(engine, image, [
        "sh",
        "-c",
        "cat /workspace/README.md; stat -c '%u' /workspace/.git; git -C /workspace remote get-url origin; " +
        "grep -r . /workspace/.git/config",
      ], [{ volume, target: "/workspace" }]);
      assert.equal(look.code, 0, look.stderr);
      assert.ok(look.stdout.startsWith(`clone test\n1000\n${server.url}/${repo}.git\n`), look.stdout);
      assert.ok(!look.stdout.includes(token), "token must not be in .git/config or the remote URL");
      assert.deepEqual(await engine.containerList({ "lvmh.repo": repo, "lvmh.kind": "clone" }), []);
    });

    await t.step("second run pulls a new commit", async () => {
      const work = await Deno.makeTempDir({ prefix: "lvmh-git-work-" });
      await git(["clone", "-q", `${root}/${repo}.git`, work]);
      await Deno.writeTextFile(`${work}/NEW.md`, "new\n");
      await git(["-C", work, "add", "-A"]);
      await git([
        "-C",
        work,
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t.invalid",
        "commit",
        "-q",
        "-m",
        "two",
      ]);
      await git(["-C", work, "push", "-q", "origin", "main"]);
      await Deno.remove(work, { recursive: true });
      const result = await clone({ token });
      assert.equal(result.action, "pulled");
      const look = await runOnce(engine, image, ["cat", "/workspace/NEW.md"], [{
        volume,
        target: "/workspace",
      }]);
      assert.equal(look.stdout, "new\n");
    });

    await t.step("a wrong token fails with git's message and leaves no helper behind", async () => {
      const other = `lvmh-test-repo2-${id}`;
      const error = await clone({ token: "wrong-token", volume: other }).catch((e) => e);
      assert.ok(error instanceof Error);
      assert.match(error.message, /Authentication failed|could not read|403|401/i);
      assert.ok(!error.message.includes("wrong-token"));
      assert.deepEqual(await engine.containerList({ "lvmh.repo": repo, "lvmh.kind": "clone" }), []);
      await engine.volumeRemove(other, true).catch(() => {});
    });

    await t.step("an unknown branch fails", async () => {
      const error = await clone({ token, volume: `lvmh-test-repo3-${id}`, branch: "no-such-branch" }).catch((
        e,
      ) => e);
      assert.match(String(error), /no-such-branch/);
      await engine.volumeRemove(`lvmh-test-repo3-${id}`, true).catch(() => {});
    });
  } finally {
    await server.close();
    await engine.volumeRemove(volume, true).catch(() => {});
    await cleanupDocker(engine, { repos: [repo], images: [image] });
    await Deno.remove(root, { recursive: true });
  }
});
