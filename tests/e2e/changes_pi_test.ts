/**
 * A terminal session's changes through the plugin, with the real pi 0.73.1 and 1.6.0 (RPC mode): pi's cwd is
 * a clone with a local commit, an edit, an untracked file and a lockfile; `GET /api/sessions/:id/changes`
 * is answered by the plugin's `command_result` against the merge-base with the upstream, the lockfile's diff
 * comes from `/changes/file`, a file pi's own `write` tool made is listed, the stored event keeps no copy of the answer, and an offline session is 409.
 */
import assert from "node:assert/strict";
import { startDaemon, waitFor } from "../../testing/daemon.ts";
import { startFakeLlm, WRITEFILE_CONTENT, WRITEFILE_PATH } from "../../testing/fixtures/fake_llm.mjs";
import { cliEnv, lvmh } from "../../testing/cli.ts";
import { allEvents, assertInstalled, makePiHome, PI_VERSIONS, piRpc, sessions } from "../../testing/pi.ts";

const GIT_ENV = {
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_AUTHOR_NAME: "Ada",
  GIT_AUTHOR_EMAIL: "ada@example.invalid",
  GIT_COMMITTER_NAME: "Ada",
  GIT_COMMITTER_EMAIL: "ada@example.invalid",
};

async function git(cwd: string, ...args: string[]): Promise<string> {
  const out = await new Deno.Command("git", { args, cwd, env: GIT_ENV, stdout: "piped", stderr: "piped" })
    .output();
  if (!out.success) throw new Error(`git ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  return new TextDecoder().decode(out.stdout).trim();
}

/** pi's workspace: a clone of a fresh bare repository, then the work a session would have left. */
async function fillWorkspace(workspace: string, scratch: string): Promise<string> {
  const seed = `${scratch}/seed`;
  await Deno.mkdir(seed);
  await git(seed, "init", "-q", "-b", "main");
  await Deno.writeTextFile(`${seed}/a.txt`, "one\ntwo\nthree\n");
  await git(seed, "add", "-A");
  await git(seed, "commit", "-q", "-m", "base");
  await git(scratch, "clone", "-q", "--bare", seed, "origin.git");
  await git(workspace, "clone", "-q", `${scratch}/origin.git`, ".");
  const forkPoint = await git(workspace, "rev-parse", "HEAD");
  await Deno.writeTextFile(`${workspace}/a.txt`, "one\n2\nthree\n");
  await git(workspace, "commit", "-q", "-am", "agent edit");
  await Deno.writeTextFile(`${workspace}/a.txt`, "one\n2\nthree\nfour\n");
  await Deno.writeTextFile(`${workspace}/new.txt`, "new\n");
  await Deno.writeTextFile(`${workspace}/package-lock.json`, '{\n  "lockfileVersion": 3\n}\n');
  return forkPoint;
}

type Ev = Record<string, unknown> & { type: string };

for (const v of PI_VERSIONS) {
  Deno.test(`plugin on pi ${v.name}: a terminal session's changes`, async (t) => {
    assertInstalled(v);
    const llm = await startFakeLlm();
    await using home = await makePiHome(llm.url);
    const forkPoint = await fillWorkspace(home.workspace, home.dir);
    await using d = await startDaemon();
    const pi = piRpc(v, home, home.env(d));
    try {
      const online = await waitFor(
        async () => (await sessions(d)).find((s) => s.online),
        "pi online",
        20_000,
      );
      const id = online.id as string;
      const get = async (path: string) => {
        const res = await d.api(`/api/sessions/${id}${path}`);
        return { status: res.status, type: res.headers.get("content-type"), body: await res.json() };
      };

      await t.step("scope all: against the merge-base with the upstream, commits included", async () => {
        const r = await get("/changes");
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.match(r.type ?? "", /application\/json/);
        assert.deepEqual(r.body.base, { branch: "origin/main", sha: forkPoint });
        assert.equal(r.body.branch, "main");
        assert.equal(r.body.head, await git(home.workspace, "rev-parse", "HEAD"));
        const files = r.body.files as Record<string, unknown>[];
        assert.deepEqual(
          files.map((f) => [f.path, f.status, f.additions, f.deletions, f.collapsed ?? false]),
          [
            ["a.txt", "modified", 2, 1, false],
            ["new.txt", "added", 1, 0, false],
            ["package-lock.json", "added", 3, 0, true],
          ],
        );
        assert.match(files[0].diff as string, /\n-two\n\+2\n three\n\+four\n$/);
        assert.equal(files[2].diff, undefined);
        assert.deepEqual(r.body.stats, { files: 3, additions: 6, deletions: 1 });
        assert.deepEqual(r.body.commits.map((c: { title: string }) => c.title), ["agent edit"]);
      });

      await t.step("scope uncommitted: against HEAD", async () => {
        const r = await get("/changes?scope=uncommitted");
        assert.equal(r.status, 200);
        assert.equal(r.body.base.sha, await git(home.workspace, "rev-parse", "HEAD"));
        assert.deepEqual(
          r.body.files.map((f: { path: string; additions: number }) => [f.path, f.additions]),
          [["a.txt", 1], ["new.txt", 1], ["package-lock.json", 3]],
        );
        assert.deepEqual(r.body.commits, []);
      });

      await t.step("a collapsed file's diff comes from /changes/file; an unchanged path is 404", async () => {
        const r = await get("/changes/file?path=package-lock.json");
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.equal(r.body.path, "package-lock.json");
        assert.match(r.body.diff, /\n\+ {2}"lockfileVersion": 3\n\+}\n$/);
        assert.equal((await get("/changes/file?path=nope.txt")).status, 404);
        assert.equal((await get("/changes/file")).status, 400);
        assert.equal((await get("/changes?scope=everything")).status, 400);
      });

      await t.step("the stored command_result keeps no copy of the answer; git wrote nothing", async () => {
        const results = (await allEvents(d, id) as Ev[]).filter((e) => e.type === "command_result");
        assert.ok(results.length >= 4, JSON.stringify(results));
        assert.ok(results.every((e) => e.ok === true && !("changes" in e)), JSON.stringify(results));
        assert.equal(
          await git(home.workspace, "status", "--porcelain"),
          "M a.txt\n?? new.txt\n?? package-lock.json",
        );
      });

      await t.step("lvmh changes prints the diff, --stat a summary, --uncommitted against HEAD", async () => {
        const env = cliEnv(home.dir, d);
        const diff = await lvmh(env, ["changes", id]);
        assert.equal(diff.code, 0, diff.stderr);
        assert.match(
          diff.stdout,
          new RegExp(`^against origin/main ${forkPoint.slice(0, 10)} on main: 3 file\\(s\\)`),
        );
        assert.match(diff.stdout, /\n {2}[0-9a-f]{10} agent edit \(Ada\)\n/);
        assert.match(diff.stdout, /\ndiff --git a\/a.txt b\/a.txt\n[\s\S]*\n-two\n\+2\n/);
        assert.match(diff.stdout, /\n# package-lock.json \(collapsed\): \+3 -0, diff not shown/);
        const stat = await lvmh(env, ["changes", id, "--stat", "--uncommitted"]);
        assert.equal(stat.code, 0, stat.stderr);
        assert.match(stat.stdout, /^uncommitted, against main [0-9a-f]{10} on main: 3 file\(s\), \+5 -0\n/);
        assert.match(stat.stdout, /\nmodified +1 +0 +a.txt\n/);
        assert.doesNotMatch(stat.stdout, /diff --git/);
        const missing = await lvmh(env, ["changes", "no-such-session"]);
        assert.equal(missing.code, 1);
      });

      await t.step("a file the agent writes (pi's write tool) is listed in both scopes", async () => {
        const settled = async () =>
          (await allEvents(d, id) as Ev[]).filter((e) => e.type === "agent_settled").length;
        const before = await settled();
        const res = await d.api(`/api/sessions/${id}/prompt`, {
          method: "POST",
          body: JSON.stringify({ message: "WRITEFILE please" }),
        });
        assert.equal(res.status, 200);
        await res.body?.cancel();
        await waitFor(async () => await settled() > before, "the run settled", 20_000);
        assert.equal(await Deno.readTextFile(`${home.workspace}/${WRITEFILE_PATH}`), WRITEFILE_CONTENT);
        for (const scope of ["all", "uncommitted"]) {
          const r = await get(`/changes?scope=${scope}`);
          assert.equal(r.status, 200);
          const f = (r.body.files as Record<string, unknown>[]).find((x) => x.path === WRITEFILE_PATH);
          assert.deepEqual([f?.status, f?.additions, f?.deletions], ["added", 2, 0], scope);
          assert.match(f!.diff as string, /\n@@ -0,0 \+1,2 @@\n\+written by the agent\n\+second line\n$/);
        }
      });

      await t.step("an unknown session is 404; an offline one 409", async () => {
        assert.equal((await d.api(`/api/sessions/nope/changes`)).status, 404);
        await pi.stop();
        await waitFor(async () => !(await sessions(d)).find((s) => s.id === id)?.online, "pi offline");
        const r = await get("/changes");
        assert.equal(r.status, 409, JSON.stringify(r.body));
      });
    } finally {
      await pi[Symbol.asyncDispose]();
      await llm.close();
    }
  });
}
