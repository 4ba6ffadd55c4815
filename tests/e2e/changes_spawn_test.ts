/**
 * A spawned session's changes on the real engine: what the agent wrote in its working copy (an edit, a
 * commit, a 20 MB generated file, a lockfile) is listed by `GET /api/sessions/:id/changes` in both scopes,
 * against the base the daemon recorded, computed by a diff helper that is gone afterwards.
 */
import assert from "node:assert/strict";
import { dockerTest, runOnce } from "../../testing/docker.ts";
import { post, startSpawnEnv } from "../../testing/spawn_env.ts";
import { workVolumeName } from "../../lib/workspaces.ts";
import type { ChangedFile, Changes } from "../../lib/changes/types.ts";

// What an agent leaves: a commit, then an edit of it, a new file, a generated file and a lockfile.
const AGENT_WORK = `set -eu
printf 'one\\ntwo\\n' > notes.txt
git add notes.txt
git -c user.name=Agent -c user.email=agent@example.invalid commit -q -m "agent notes"
printf 'one\\n2\\n' > notes.txt
echo hello > hello.txt
seq 1 2800000 > generated.txt
test "$(wc -c < generated.txt)" -gt 20000000
printf '{\\n  "lockfileVersion": 3\\n}\\n' > package-lock.json
`;

dockerTest("changes: a spawned session's working copy, read by the diff helper", async (t) => {
  const env = await startSpawnEnv();
  const { d, engine } = env;
  const repo = env.repos[0];
  try {
    await post(d, "/api/gitlab/connect", { token: env.pat }).then((r) => r.body?.cancel());
    const res = await post(d, "/api/spawn", { repo });
    const spawned = await res.json() as { sessionId: string };
    assert.equal(res.status, 201, JSON.stringify(spawned));
    const id = spawned.sessionId;
    const work = await runOnce(engine, env.image, [
      "sh",
      "-c",
      `cd /workspace && ${AGENT_WORK} git rev-parse HEAD~1`,
    ], [{
      volume: workVolumeName(id),
      target: "/workspace",
    }]);
    assert.equal(work.code, 0, work.stderr);
    const base = work.stdout.trim();
    const get = async <T>(path: string) => {
      const r = await d.api(`/api/sessions/${id}${path}`);
      return { status: r.status, body: await r.json() as T };
    };

    await t.step(
      "scope all: against the recorded base, the 20 MB file truncated, the lockfile collapsed",
      async () => {
        const started = performance.now();
        const r = await get<Changes>("/changes");
        const ms = performance.now() - started;
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.deepEqual(r.body.base, { branch: "main", sha: base });
        assert.match(r.body.branch ?? "", /^lvmh\/[0-9a-f]{8}$/);
        const files = Object.fromEntries(r.body.files.map((f) => [f.path, f]));
        assert.deepEqual(Object.keys(files), [
          "generated.txt",
          "hello.txt",
          "notes.txt",
          "package-lock.json",
        ]);
        assert.deepEqual(
          [files["notes.txt"].status, files["notes.txt"].additions, files["notes.txt"].deletions],
          ["added", 2, 0],
        );
        assert.match(files["notes.txt"].diff!, /\n\+one\n\+2\n$/);
        assert.deepEqual(
          [files["generated.txt"].truncated, files["generated.txt"].additions, files["generated.txt"].diff],
          [true, 2_800_000, undefined],
        );
        assert.deepEqual([files["package-lock.json"].collapsed, files["package-lock.json"].diff], [
          true,
          undefined,
        ]);
        assert.deepEqual(r.body.commits.map((c) => [c.title, c.author]), [["agent notes", "Agent"]]);
        assert.ok(JSON.stringify(r.body).length < 10_000);
        console.log(`spawned /changes: ${ms.toFixed(0)} ms`);
      },
    );

    await t.step("scope uncommitted: against HEAD", async () => {
      const r = await get<Changes>("/changes?scope=uncommitted");
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const notes = r.body.files.find((f) => f.path === "notes.txt")!;
      assert.deepEqual([notes.status, notes.additions, notes.deletions], ["modified", 1, 1]);
      assert.deepEqual(r.body.commits, []);
    });

    await t.step("the lockfile's diff is on /changes/file; the helpers are gone", async () => {
      const r = await get<ChangedFile>("/changes/file?path=package-lock.json");
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.match(r.body.diff!, /\n\+ {2}"lockfileVersion": 3\n\+}\n$/);
      assert.equal((await get("/changes/file?path=absent.txt")).status, 404);
      assert.deepEqual(await engine.containerList({ "lvmh.session": id, "lvmh.kind": "diff" }), []);
    });
  } finally {
    await env.close();
  }
});
