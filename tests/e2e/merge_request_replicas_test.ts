/**
 * Shipping a session through two replicas: two daemon processes on one real PostgreSQL database, the real
 * Docker engine (helper containers on the worker-shaped stub image) and the loopback GitLab (API and git smart
 * HTTP, push included). The session, its working-copy record and its filled `lvmh-work-<id>` volume are made
 * as a spawn on some replica makes them (the spawn itself is tested in merge_request_spawn_test.ts).
 * - A's changes route diffs the working copy against the recorded base (the diff helper on the engine).
 * - B ships: the branch is pushed and the merge request opened; A's route and A's session list show it.
 * - The agent works on; A ships: A pushes under the lease B recorded (the sha B pushed) and updates the same
 *   merge request (200, not a second one); B's route shows A's push.
 */
import assert from "node:assert/strict";
import { postgresBinDir, startPostgres } from "../../testing/postgres.ts";
import { type Replica, startReplicas } from "../../testing/replicas.ts";
import { waitFor } from "../../testing/daemon.ts";
import { sessionInfo } from "../../testing/agent.ts";
import { buildStubWorker, cleanupDocker, DOCKER_SOCK, testEngine, uniq } from "../../testing/docker.ts";
import { createBareRepo, git, gitHttpHandler } from "../../testing/fixtures/git_http.ts";
import { startGitlabFixture } from "../../testing/fixtures/gitlab_fixture.ts";
import { agentDoes, bundleOf, fillWorkingCopy } from "../../testing/work_copy.ts";
import { workspaceBranch, workVolumeName } from "../../lib/workspaces.ts";
import { PgEventLog } from "../../lib/storage/pg_event_log.ts";
import { PgSessionStateLog } from "../../lib/storage/pg_session_state_log.ts";
import type { AgentEvent, MergeRequestView, SessionInfo, SessionSummary } from "../../lib/protocol.ts";
import type { Changes } from "../../lib/changes/types.ts";

const HAVE_POSTGRES = (await postgresBinDir()) !== null;

Deno.test({
  name: "replicas: a session shipped through B, then through A: one branch, one merge request, shared lease",
  ignore: !DOCKER_SOCK || !HAVE_POSTGRES,
  fn: async (t) => {
    const engine = testEngine();
    const id = uniq();
    const image = `lvmh-mrrep-worker-${id}:latest`;
    const project = `group/mrrep-${id}`;
    const token = `glpat-${id}-mrrep-token`;
    const root = await Deno.makeTempDir({ prefix: "lvmh-mrrep-" });
    const gitHttp = gitHttpHandler({ root, password: token });
    const gl = startGitlabFixture({
      token,
      projects: [{ path: project, lastActivityAt: "2026-01-01T00:00:00Z" }],
      git: gitHttp.handle,
      gitRoot: root,
    });
    const sessionId = crypto.randomUUID();
    const branch = workspaceBranch(sessionId);
    const volume = workVolumeName(sessionId);
    const bare = `${root}/${project}.git`;
    const remoteHead = async () =>
      (await git(["--git-dir", bare, "for-each-ref", "--format=%(objectname)", `refs/heads/${branch}`]))
        .trim();
    await using pg = await startPostgres();
    const url = await pg.newDatabase();
    const events = await PgEventLog.open(url, { max: 1 });
    const state = await PgSessionStateLog.open(url, { max: 1 });
    try {
      // What a spawn leaves: the project, the session, its working-copy record and its filled volume.
      await buildStubWorker(engine, image);
      const base = await createBareRepo(root, project, { "README.md": "hello\n", "src/a.txt": "a\n" });
      await events.ensureSession(sessionInfo(sessionId, { agent: true, repo: project }) as SessionInfo);
      const epoch = await events.claimHolder(sessionId, "gone-replica");
      const start = { v: 1, sessionId, seq: 1, ts: Date.now(), type: "agent_start" };
      await events.append(sessionId, [start as unknown as AgentEvent], { epoch });
      await state.recordWorkspace(sessionId, { repo: project, baseBranch: "main", baseSha: base, branch });
      await engine.volumeCreate(volume, {
        "lvmh.managed": "true",
        "lvmh.session": sessionId,
        "lvmh.kind": "work",
      });
      await fillWorkingCopy(engine, {
        image,
        volume,
        bundle: await bundleOf(bare),
        branch,
        url: `${gl.url}/${project}.git`,
      });

      await using replicas = await startReplicas(2, {
        databaseUrl: url,
        env: {
          LVMH_CONTAINER_DOCKER_SOCK: DOCKER_SOCK!,
          LVMH_GITLAB_URL: gl.url,
          LVMH_WORKER_IMAGE: image,
          LVMH_WORKER_NETWORK: "host",
        },
      });
      const [a, b] = replicas.replicas;
      const call = (r: Replica, path: string, init: RequestInit = {}) =>
        fetch(`${r.url}${path}`, {
          ...init,
          headers: { authorization: `Bearer ${replicas.token}`, "content-type": "application/json" },
        });
      const ship = async (r: Replica, title: string) => {
        const res = await call(r, `/api/sessions/${sessionId}/merge-request`, {
          method: "POST",
          body: JSON.stringify({ title }),
        });
        return { status: res.status, body: await res.json() };
      };
      const view = async (r: Replica) => {
        const res = await call(r, `/api/sessions/${sessionId}/merge-request`);
        assert.equal(res.status, 200, `${r.id}: ${await res.clone().text()}`);
        return await res.json() as MergeRequestView;
      };
      const listed = async (r: Replica) => {
        const list = await (await call(r, "/api/sessions")).json() as SessionSummary[];
        return JSON.stringify(list.find((s) => s.id === sessionId)?.mergeRequest ?? null);
      };
      const connected = await call(a, "/api/gitlab/connect", {
        method: "POST",
        body: JSON.stringify({ token }),
      });
      assert.equal(connected.status, 200, await connected.clone().text());
      await connected.body?.cancel();
      for (const r of [a, b]) {
        await waitFor(async () => {
          const list = await (await call(r, "/api/sessions")).json() as SessionSummary[];
          const status = await (await call(r, "/api/gitlab/status")).json() as { connected: boolean };
          return list.some((s) => s.id === sessionId) && status.connected;
        }, `${r.id} has the session and the GitLab connection`);
      }

      await t.step("the agent's commit, diffed through A against the recorded base", async () => {
        await agentDoes(
          engine,
          image,
          volume,
          "printf 'agent\\n' >> src/a.txt; git add -A; git commit -q -m 'agent: edit a'",
        );
        const res = await call(a, `/api/sessions/${sessionId}/changes`);
        const changes = await res.json() as Changes;
        assert.equal(res.status, 200, JSON.stringify(changes));
        assert.deepEqual(changes.base, { branch: "main", sha: base });
        assert.deepEqual(changes.files.map((f) => [f.path, f.additions]), [["src/a.txt", 1]]);
      });

      let first = "";
      await t.step("B ships: pushed, merge request opened; A's route and list show it", async () => {
        const out = await ship(b, "Edit a");
        assert.equal(out.status, 201, JSON.stringify(out.body));
        first = await remoteHead();
        assert.equal(out.body.mergeRequest.sha, first);
        assert.equal(gl.mergeRequests.length, 1);
        const fromA = await view(a);
        assert.equal(fromA.iid, 1);
        assert.equal(fromA.sha, first, "the push B recorded");
        assert.equal(fromA.title, "Edit a");
        await waitFor(
          async () => (await listed(a)) === '{"iid":1,"state":"opened","pipeline":null}',
          "A's list row shows B's merge request",
          5_000,
        );
      });

      await t.step("A ships new work over B's push: the same branch and merge request move", async () => {
        await agentDoes(engine, image, volume, "printf 'more\\n' > MORE.md");
        const out = await ship(a, "Edit a, add MORE");
        assert.equal(out.status, 200, `an update, not a new merge request: ${JSON.stringify(out.body)}`);
        const second = await remoteHead();
        assert.notEqual(second, first);
        assert.equal(
          (await git(["--git-dir", bare, "rev-parse", `${branch}~1`])).trim(),
          first,
          "on top of B's",
        );
        assert.equal(out.body.mergeRequest.iid, 1);
        assert.equal(gl.mergeRequests.length, 1);
        assert.equal(gl.mergeRequests[0].title, "Edit a, add MORE");
        const fromB = await view(b);
        assert.equal(fromB.sha, second, "B shows A's push");
        assert.equal(fromB.title, "Edit a, add MORE");
      });
    } finally {
      await state.close();
      await events.close();
      await gl.close();
      await engine.volumeRemove(volume, true).catch(() => {});
      await cleanupDocker(engine, { repos: [project], images: [image] });
      await Deno.remove(root, { recursive: true });
    }
  },
});
