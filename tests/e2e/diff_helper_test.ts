import assert from "node:assert/strict";
import { runDiffHelper } from "../../docker/diff_helper.ts";
import { CHANGE_LIMITS, changesFromOutput } from "../../lib/changes/mod.ts";
import {
  buildStubWorker,
  cleanupDocker,
  dockerTest,
  runOnce,
  testEngine,
  uniq,
} from "../../testing/docker.ts";

// A working copy made in a volume the way a worker leaves it: a base commit, one commit of the agent's, an
// edit, an untracked file, and a config that would run a command if git trusted it.
const FILL = `set -eu
cd /workspace
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
git init -q -b main .
git config user.name Agent; git config user.email agent@example.invalid
printf 'one\\ntwo\\nthree\\n' > a.txt
git add -A; git commit -q -m base
git rev-parse HEAD
printf 'one\\n2\\nthree\\n' > a.txt
git commit -q -am "agent edit"
echo more >> a.txt
echo new > untracked.txt
git config core.fsmonitor 'touch /workspace/ran'
git config diff.external 'touch /workspace/ran'
`;

dockerTest(
  "runDiffHelper() reads a working copy read-only, with no network, and leaves nothing",
  async () => {
    const engine = testEngine();
    const id = uniq();
    const image = `lvmh-test-worker-${id}:latest`;
    const repo = `group/diff-${id}`;
    const volume = `lvmh-test-work-${id}`;
    const labels = { "lvmh.managed": "true", "lvmh.repo": repo };
    const bodies: Record<string, unknown>[] = [];
    const spy = {
      ...engine,
      containerCreate: (name: string, body: Record<string, unknown>) => {
        bodies.push(body);
        return engine.containerCreate(name, body);
      },
    };
    try {
      await buildStubWorker(engine, image);
      await engine.volumeCreate(volume, labels);
      const fill = await runOnce(engine, image, ["sh", "-c", FILL], [{ volume, target: "/workspace" }]);
      assert.equal(fill.code, 0, fill.stderr);
      const base = fill.stdout.trim();

      const started = performance.now();
      const all = await runDiffHelper(spy, {
        image,
        volume,
        scope: "all",
        base: { sha: base, branch: "main" },
        labels,
      });
      const ms = performance.now() - started;
      const c = changesFromOutput(all.output, all.boundary, { scope: "all", limits: CHANGE_LIMITS });
      assert.deepEqual(c.base, { branch: "main", sha: base });
      assert.equal(c.branch, "main");
      assert.deepEqual(c.files.map((f) => [f.path, f.status, f.additions, f.deletions]), [
        ["a.txt", "modified", 2, 1],
        ["untracked.txt", "added", 1, 0],
      ]);
      assert.match(c.files[0].diff!, /\n-two\n\+2\n three\n\+more\n$/);
      assert.deepEqual(c.commits.map((x) => [x.title, x.author]), [["agent edit", "Agent"]]);
      console.log(`diff helper: ${ms.toFixed(0)} ms`);

      const unc = await runDiffHelper(spy, {
        image,
        volume,
        scope: "uncommitted",
        base: { sha: base, branch: "main" },
        labels,
      });
      const u = changesFromOutput(unc.output, unc.boundary, { scope: "uncommitted", limits: CHANGE_LIMITS });
      assert.deepEqual(u.files.map((f) => [f.path, f.additions, f.deletions]), [["a.txt", 1, 0], [
        "untracked.txt",
        1,
        0,
      ]]);
      assert.deepEqual(u.commits, []);

      // No network, no token, the copy read-only; git ran nothing the copy's config asked for; nothing left.
      for (const body of bodies) {
        const host = body.HostConfig as { NetworkMode: string; Mounts: { ReadOnly: boolean }[] };
        assert.equal(host.NetworkMode, "none");
        assert.equal(body.NetworkDisabled, true);
        assert.deepEqual(host.Mounts.map((m) => m.ReadOnly), [true]);
        assert.ok(!JSON.stringify(body.Env ?? []).includes("TOKEN"));
      }
      const look = await runOnce(engine, image, [
        "sh",
        "-c",
        "ls -a /workspace",
      ], [{
        volume,
        target: "/workspace",
      }]);
      assert.equal(look.stdout, ".\n..\n.git\na.txt\nuntracked.txt\n");
      assert.deepEqual(await engine.containerList({ "lvmh.repo": repo, "lvmh.kind": "diff" }), []);

      await t_missingVolume(spy, image, labels);
    } finally {
      await cleanupDocker(engine, { repos: [repo], images: [image] });
    }
  },
);

/** A session whose working copy is gone: the engine's refusal, and no helper left behind. */
async function t_missingVolume(
  engine: ReturnType<typeof testEngine>,
  image: string,
  labels: Record<string, string>,
) {
  const volume = `lvmh-test-work-missing-${uniq()}`;
  // Docker creates a missing named volume on create; the helper then sees an empty directory: not a repo.
  const out = await runDiffHelper(engine, {
    image,
    volume,
    scope: "all",
    base: { sha: "0".repeat(40), branch: "main" },
    labels,
  });
  const c = changesFromOutput(out.output, out.boundary, { scope: "all", limits: CHANGE_LIMITS });
  assert.deepEqual([c.base, c.files], [null, []]);
  await engine.volumeRemove(volume, true).catch(() => {});
}
