/**
 * Working-copy and merge-request records across replicas: two daemon processes on one real PostgreSQL
 * database and the loopback GitLab, each replica reaching it through an HTTP proxy of its own (`HTTP_PROXY`)
 * that counts the reads of the merge request, so every read is known to come from one replica.
 *
 * The session and its working-copy record are written in PostgreSQL as a spawn on some replica writes them
 * (the spawn itself needs Docker: tests/e2e/); its merge request record as a ship records its push, then:
 * - a GitLab hook's merge request event on A makes A read the merge request again; B's REST route and B's
 *   session list answer what A read, without asking GitLab; B's ship finds the working copy (it stops at the
 *   Docker helper, where a replica without the record would refuse it as "not a spawned session");
 * - a pipeline event and a merge request event on B change the record; A's route and A's list show them;
 * - the follower reads a due merge request from the leader only (the record is made due again after each
 *   read, so any replica polling would read it), and from the other once the leader is SIGKILLed;
 * - deleting the session removes both records from PostgreSQL.
 */
import assert from "node:assert/strict";
import { postgresBinDir, startPostgres } from "../../testing/postgres.ts";
import { type Replica, startReplicas } from "../../testing/replicas.ts";
import { waitFor } from "../../testing/daemon.ts";
import { sessionInfo } from "../../testing/agent.ts";
import { startGitlabFixture } from "../../testing/fixtures/gitlab_fixture.ts";
import { connectPostgres } from "../../lib/storage/pg_client.ts";
import { PgEventLog } from "../../lib/storage/pg_event_log.ts";
import { PgSessionStateLog } from "../../lib/storage/pg_session_state_log.ts";
import { PgMergeRequestLog } from "../../lib/storage/pg_merge_request_log.ts";
import type { AgentEvent, MergeRequestView, SessionInfo, SessionSummary } from "../../lib/protocol.ts";

const HAVE_POSTGRES = (await postgresBinDir()) !== null;
const TOKEN = "fixture-token-replicas-mr";
const PROJECT = "group/app";
const SESSION = "5e55a0b1-0000-4000-8000-0000000000aa";
const BRANCH = "lvmh/5e55a0b1";
const HOOK_SECRET = "replicas-hook-secret-0123456789";
/** A poll round is every 10 s (POLL_MS); two rounds and the leader's switch, with room. */
const POLL_DEADLINE_MS = 25_000;

/**
 * An HTTP forward proxy (requests in absolute form) to the GitLab fixture, counting the reads of merge
 * request !1 that pass through it.
 */
function countingProxy(target: string) {
  let reads = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const url = new URL(req.url);
    if (req.method === "GET" && /\/merge_requests\/1$/.test(url.pathname)) reads++;
    const res = await fetch(`${target}${url.pathname}${url.search}`, {
      method: req.method,
      headers: req.headers,
      body: req.body,
    });
    return new Response(res.body, { status: res.status, headers: res.headers });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    reads: () => reads,
    close: () => server.shutdown(),
  };
}

Deno.test({
  name: "replicas: working copy and merge request records are shared; one replica follows GitLab",
  ignore: !HAVE_POSTGRES,
  fn: async (t) => {
    await using pg = await startPostgres();
    const url = await pg.newDatabase();
    const gl = startGitlabFixture({
      token: TOKEN,
      projects: [{ path: PROJECT, lastActivityAt: "2026-01-01" }],
    });
    const proxies = { r0: countingProxy(gl.url), r1: countingProxy(gl.url) };
    const sql = connectPostgres(url, { max: 1 });
    const events = await PgEventLog.open(url, { max: 1 });
    const state = await PgSessionStateLog.open(url, { max: 1 });
    const records = await PgMergeRequestLog.open(url, { max: 1 });
    try {
      // The merge request on GitLab, and what a spawn and a ship's push leave in the shared database.
      const made = await fetch(`${gl.url}/api/v4/projects/${encodeURIComponent(PROJECT)}/merge_requests`, {
        method: "POST",
        headers: { "private-token": TOKEN, "content-type": "application/json" },
        body: JSON.stringify({ source_branch: BRANCH, target_branch: "main", title: "Add the notes file" }),
      });
      assert.equal(made.status, 201);
      await made.body?.cancel();
      await events.ensureSession(sessionInfo(SESSION, { agent: true, repo: PROJECT }) as SessionInfo);
      const epoch = await events.claimHolder(SESSION, "gone-replica");
      const start = { v: 1, sessionId: SESSION, seq: 1, ts: Date.now(), type: "agent_start" };
      await events.append(SESSION, [start as unknown as AgentEvent], { epoch });
      await state.recordWorkspace(SESSION, {
        repo: PROJECT,
        baseBranch: "main",
        baseSha: "a".repeat(40),
        branch: BRANCH,
      });
      assert.equal(
        await records.updateIf(
          SESSION,
          null,
          { repo: PROJECT, sourceBranch: BRANCH, sha: "b".repeat(40) },
          1,
        ),
        true,
      );
      const pushed = (await records.row(SESSION))!;
      const fields = {
        iid: 1,
        webUrl: "",
        state: "opened" as const,
        targetBranch: "main",
        title: "Seeded",
        pipeline: null,
        mergeStatus: null,
        notes: 0,
      };
      const marks = { notified: null, prompted: null, prompts: 0 };
      // Read just now: not due for the follower until the test says so.
      const seeded = { fields, updatedAt: Date.now(), refreshedAt: Date.now(), marks };
      assert.equal(await records.saveIf(SESSION, pushed, seeded), true);

      await using replicas = await startReplicas(2, {
        databaseUrl: url,
        env: { LVMH_GITLAB_URL: gl.url, LVMH_GITLAB_HOOK_SECRET: HOOK_SECRET },
        // One GitLab URL (the token is kept for that URL), reached by each replica through its own proxy.
        envOf: (id) => {
          const proxy = proxies[id as "r0" | "r1"].url;
          return { HTTP_PROXY: proxy, http_proxy: proxy, NO_PROXY: "", no_proxy: "" };
        },
      });
      const [a, b] = replicas.replicas;
      const reads = (r: Replica) => proxies[r.id as "r0" | "r1"].reads();
      const call = (r: Replica, path: string, init: RequestInit = {}) =>
        fetch(`${r.url}${path}`, {
          ...init,
          headers: { authorization: `Bearer ${replicas.token}`, "content-type": "application/json" },
        });
      const view = async (r: Replica) => {
        const res = await call(r, `/api/sessions/${SESSION}/merge-request`);
        assert.equal(res.status, 200, `${r.id}: ${await res.clone().text()}`);
        return await res.json() as MergeRequestView;
      };
      const listed = async (r: Replica) => {
        const list = await (await call(r, "/api/sessions")).json() as SessionSummary[];
        return JSON.stringify(list.find((s) => s.id === SESSION)?.mergeRequest ?? null);
      };
      const hook = async (r: Replica, event: string, body: unknown, key: string) => {
        const res = await fetch(`${r.url}/hooks/gitlab`, {
          method: "POST",
          headers: {
            "x-gitlab-event": event,
            "x-gitlab-token": HOOK_SECRET,
            "idempotency-key": key,
            "content-type": "application/json",
          },
          body: JSON.stringify(body),
        });
        assert.equal(res.status, 202, await res.clone().text());
        assert.deepEqual(await res.json(), { ok: true }, `${r.id} follows the merge request`);
      };
      const mrEvent = (title: string) => ({
        object_kind: "merge_request",
        project: { path_with_namespace: PROJECT },
        object_attributes: { iid: 1, source_branch: BRANCH, state: "opened", action: "update", title },
      });

      // Connected through A (the setting is shared); both copies have the session.
      const connected = await call(a, "/api/gitlab/connect", {
        method: "POST",
        body: JSON.stringify({ token: TOKEN }),
      });
      assert.equal(connected.status, 200, await connected.clone().text());
      await connected.body?.cancel();
      for (const r of [a, b]) {
        await waitFor(async () => (await listed(r)) !== "null", `${r.id} lists the session's merge request`);
        await waitFor(async () => {
          const res = await call(r, "/api/gitlab/status");
          return (await res.json() as { connected?: boolean }).connected === true;
        }, `${r.id} is connected`);
      }

      await t.step("what A reads from GitLab, B's route and list answer", async () => {
        await hook(a, "Merge Request Hook", mrEvent("Add the notes file"), "mr-a-1");
        await waitFor(async () => (await view(a)).title === "Add the notes file", "A read GitLab");
        assert.equal(reads(a), 1, "A asked GitLab once");
        const fromB = await view(b);
        assert.equal(fromB.title, "Add the notes file");
        assert.equal(fromB.sourceBranch, BRANCH);
        assert.equal(fromB.sha, "b".repeat(40), "the pushed sha as the ship recorded it");
        assert.equal(reads(b), 0, "B answered from the shared record");
        assert.equal(await listed(b), '{"iid":1,"state":"opened","pipeline":null}');
      });

      await t.step(
        "B finds the session's working copy record: its ship goes on to the working copy",
        async () => {
          const res = await call(b, `/api/sessions/${SESSION}/merge-request`, {
            method: "POST",
            body: JSON.stringify({ title: "Ship from B" }),
          });
          const text = await res.text();
          assert.doesNotMatch(text, /not a spawned session/, text);
          assert.equal(res.status, 503, `stopped at the Docker helper (no engine in this test): ${text}`);
        },
      );

      await t.step("a pipeline and a merge request event on B: A's route and list show them", async () => {
        const before = reads(a);
        const pipeline = {
          object_kind: "pipeline",
          object_attributes: { id: 8, ref: BRANCH, status: "failed", url: "http://gitlab.example/p/8" },
          project: { path_with_namespace: PROJECT },
          builds: [{ name: "unit-tests", status: "failed" }],
        };
        await hook(b, "Pipeline Hook", pipeline, "p-b-8");
        await waitFor(
          async () => (await listed(a)) === '{"iid":1,"state":"opened","pipeline":"failed"}',
          "A's list shows B's pipeline",
          5_000,
        );
        assert.equal((await view(a)).pipeline?.id, 8);
        gl.mergeRequests[0].title = "Add the notes file, v2";
        await hook(b, "Merge Request Hook", mrEvent("Add the notes file, v2"), "mr-b-1");
        await waitFor(async () => (await view(a)).title === "Add the notes file, v2", "A shows B's read");
        assert.equal(reads(b), 1, "B asked GitLab");
        assert.equal(reads(a), before, "A did not");
      });

      const leads = (r: Replica) => r.daemon().output().includes(`replica ${r.id} leads`);
      const leader = await waitFor(() => replicas.replicas.find(leads), "a replica leads", 10_000);
      const other = replicas.replicas.find((r) => r !== leader)!;
      // Due now, and again right after every read: any replica that polls reads it at each of its rounds.
      let keepDue = true;
      const due = (async () => {
        while (keepDue) {
          await sql`UPDATE session_merge_requests SET refreshed_at = 0 WHERE refreshed_at > 0`;
          await new Promise((r) => setTimeout(r, 100));
        }
      })();
      try {
        await t.step("the follower reads GitLab on the leader only", async () => {
          const [fromLeader, fromOther] = [reads(leader), reads(other)];
          // Two of the leader's rounds: at least one round of the other's (10 s each) fell between them.
          await waitFor(() => reads(leader) >= fromLeader + 2, `${leader.id} polls twice`, POLL_DEADLINE_MS);
          assert.equal(reads(other), fromOther, `${other.id} (not leading) never polled`);
        });

        await t.step("the leader SIGKILLed, the other follows", async () => {
          const fromOther = reads(other);
          await leader.kill("SIGKILL");
          await waitFor(() => leads(other), `${other.id} leads`, 10_000);
          await waitFor(() => reads(other) > fromOther, `${other.id} polls`, POLL_DEADLINE_MS);
        });
      } finally {
        keepDue = false;
        await due;
      }

      await t.step("deleting the session deletes both shared records", async () => {
        const res = await call(other, `/api/sessions/${SESSION}`, { method: "DELETE" });
        assert.equal(res.status, 200, await res.clone().text());
        await res.body?.cancel();
        await waitFor(async () => (await records.row(SESSION)) === null, "the merge request record goes");
        await waitFor(async () => (await state.workspace(SESSION)) === null, "the working copy record goes");
      });
    } finally {
      await records.close();
      await state.close();
      await events.close();
      await sql.end({ timeout: 5 });
      await proxies.r0.close();
      await proxies.r1.close();
      await gl.close();
    }
  },
});
