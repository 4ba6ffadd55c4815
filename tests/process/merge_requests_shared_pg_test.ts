/**
 * `SharedMergeRequests` as two replicas run it: two owners, each on its own pool, on one real PostgreSQL
 * database and the loopback GitLab, the Docker steps of a push replaced by data (the real ones are in
 * tests/e2e/merge_request_test.ts). Two ships of one session at once make one merge request and record one
 * push; one failed pipeline heard by both at once is prompted for once, and its follow-up, kept in the shared
 * hook prompts through the save's transaction as lib/hooks/hooks.ts keeps it, commits with the mark (or
 * neither, when a listener throws); the other's copy (the session list's summaries) follows changes and
 * deletions.
 */
import assert from "node:assert/strict";
import type postgres from "postgres";
import { postgresBinDir, startPostgres } from "../../testing/postgres.ts";
import { startGitlabFixture } from "../../testing/fixtures/gitlab_fixture.ts";
import { PgHookPromptLog } from "../../lib/storage/pg_hook_prompt_log.ts";
import { followUpPrompt } from "../../lib/hooks/shared_kept_prompts.ts";
import { PgSessionStateLog } from "../../lib/storage/pg_session_state_log.ts";
import { PgMergeRequestLog } from "../../lib/storage/pg_merge_request_log.ts";
import { SharedWorkspaces } from "../../lib/workspaces_shared.ts";
import { SharedMergeRequests } from "../../lib/merge_requests_shared.ts";
import { createGitlabMergeRequests } from "../../lib/gitlab_merge_requests.ts";
import type { MergeRequestChange } from "../../lib/merge_request_change.ts";
import type { ShipWork } from "../../lib/ship_work.ts";
import { UpstreamError } from "../../lib/errors.ts";
import { listenSilent } from "../../testing/silent_server.ts";
import { waitFor } from "../../testing/daemon.ts";

const HAVE_POSTGRES = (await postgresBinDir()) !== null;
const TOKEN = "fixture-token-shared";
const PROJECT = "group/app";
const SESSION = "5e55a0b1-0000-4000-8000-0000000000bb";
const BRANCH = "lvmh/5e55a0b1";
const BASE = "a".repeat(40);
const HEAD = "b".repeat(40);

/** The Docker steps of a push, as data: one uncommitted change, pushed. */
const work: ShipWork = {
  inspect: () => Promise.resolve({ head: BASE, dirty: true, containsBase: true, patch: "" }),
  commit: () => Promise.resolve({ head: HEAD, committed: true, patch: "" }),
  bundle: () => Promise.resolve({ head: HEAD, bundle: new Uint8Array([1]) }),
  push: () => Promise.resolve(),
};

const failed = (id: number) => ({
  kind: "pipeline" as const,
  repo: PROJECT,
  branch: BRANCH,
  id,
  status: "failed",
  url: null,
  failedJobs: ["unit"],
});

Deno.test({
  name: "SharedMergeRequests: two replicas ship once, prompt a failed pipeline once, in its transaction",
  ignore: !HAVE_POSTGRES,
  fn: async (t) => {
    await using pg = await startPostgres();
    const url = await pg.newDatabase();
    const gl = startGitlabFixture({
      token: TOKEN,
      projects: [{ path: PROJECT, lastActivityAt: "2026-01-01" }],
    });
    const gitlab = {
      credential: () => TOKEN,
      status: () => ({ connected: true, baseUrl: gl.url, username: "lvmh-bot" }),
      cloneUrl: (repo: string) => `${gl.url}/${repo}.git`,
    };
    const state = await PgSessionStateLog.open(url, { max: 2 });
    const workspaces = new SharedWorkspaces(state);
    await workspaces.record(SESSION, { repo: PROJECT, baseBranch: "main", baseSha: BASE, branch: BRANCH });
    // The follow-ups kept as lib/hooks/hooks.ts keeps them with replicas: through the save's transaction.
    const hookPrompts = await PgHookPromptLog.open(url, { max: 1 });
    const probes = async () =>
      (await hookPrompts.prompts()).map((p) => p.detail.pipelineId as number).sort((x, y) => x - y);
    const open = async (name: string, api = createGitlabMergeRequests(gitlab)) => {
      const log = await PgMergeRequestLog.open(url, { max: 3 });
      const mrs = new SharedMergeRequests(log, { workspaces, gitlab, api, work });
      const changes: MergeRequestChange[] = [];
      const moved: string[] = [];
      mrs.onChange((c) => void changes.push(c));
      mrs.onChange(async (c, tx) => {
        if (!c.promptFailure) return;
        const pending = followUpPrompt(c.sessionId, "the pipeline failed", "hook:gitlab", {
          pipelineId: c.view.pipeline!.id,
        });
        await hookPrompts.keepWrites(pending)(tx as postgres.TransactionSql);
      }, { inTransaction: true });
      await mrs.start((ids) => moved.push(...ids), 3_600_000); // re-read by hand below
      return { name, log, mrs, changes, moved };
    };
    const a = await open("a");
    const b = await open("b");
    try {
      await t.step(
        "two ships of one session at once: one merge request, the push recorded once",
        async () => {
          const both = await Promise.allSettled([
            a.mrs.ship(SESSION, { title: "Add a" }),
            b.mrs.ship(SESSION, { title: "Add a" }),
          ]);
          for (const s of both) assert.equal(s.status, "fulfilled", JSON.stringify(s));
          assert.equal(gl.mergeRequests.length, 1, "the second create adopted the first's merge request");
          const row = (await a.log.row(SESSION))!;
          assert.equal(row.pushedSha, HEAD);
          assert.equal(row.iid, 1);
          assert.equal(a.mrs.get(SESSION)?.iid ?? b.mrs.get(SESSION)?.iid, 1);
        },
      );

      await t.step("a failed pipeline heard by both at once: prompted once, with its row", async () => {
        const both = await Promise.all([a.mrs.gitlabEvent(failed(8)), b.mrs.gitlabEvent(failed(8))]);
        assert.deepEqual(both, [[SESSION], [SESSION]]);
        const prompted = [...a.changes, ...b.changes].filter((c) => c.promptFailure);
        assert.equal(prompted.length, 1, "one replica's save decided the prompt");
        assert.deepEqual(await probes(), [8], "its row committed with the mark");
        const row = (await a.log.row(SESSION))!;
        assert.equal(row.pipelinePrompted, 8);
        assert.equal(row.pipelinePrompts, 1);
        assert.equal(JSON.parse(row.pipeline!).status, "failed");
      });

      await t.step("a listener that throws undoes the save: neither the mark nor the row", async () => {
        const off = a.mrs.onChange(() => {
          throw new Error("the follow-up could not be kept");
        }, { inTransaction: true });
        await assert.rejects(a.mrs.gitlabEvent(failed(9)), /could not be kept/);
        const row = (await a.log.row(SESSION))!;
        assert.equal(JSON.parse(row.pipeline!).id, 8, "the record is as before");
        assert.equal(row.pipelinePrompted, 8);
        assert.deepEqual(await probes(), [8]);
        off();
        assert.deepEqual(await a.mrs.gitlabEvent(failed(9)), [SESSION]);
        assert.deepEqual(await probes(), [8, 9], "heard again, kept with its mark");
        assert.equal((await a.log.row(SESSION))!.pipelinePrompts, 2);
      });

      await t.step("close() cuts a read of a GitLab that never answers; the row stays", async () => {
        await using hung = listenSilent({ port: 0 });
        const { port } = hung.addr as Deno.NetAddr;
        const c = await open(
          "c",
          createGitlabMergeRequests({
            ...gitlab,
            status: () => ({ ...gitlab.status(), baseUrl: `http://127.0.0.1:${port}` }),
          }),
        );
        try {
          const before = await c.log.row(SESSION);
          const reading = c.mrs.refresh(SESSION).then(() => "read", (e) => e);
          await waitFor(() => hung.accepted() === 1, "the read's connection");
          await c.mrs.close();
          const error = await reading; // at once: GitLab's own 15 s bound would end it with a timeout
          assert.ok(error instanceof UpstreamError, String(error));
          assert.match(error.message, /the daemon is stopping/);
          assert.deepEqual(await c.log.row(SESSION), before);
          assert.deepEqual(c.changes, [], "no change told");
        } finally {
          await c.mrs.close();
          await c.log.close();
        }
      });

      await t.step("the other's copy follows: the list's summary, then the deletion", async () => {
        b.moved.length = 0;
        await b.mrs.reread();
        assert.deepEqual(b.mrs.summary(SESSION), { iid: 1, state: "opened", pipeline: "failed" });
        assert.equal(b.mrs.get(SESSION)?.pipeline?.id, 9);
        await a.mrs.sessionDeleted(SESSION);
        assert.equal(a.mrs.summary(SESSION), undefined);
        assert.equal(await a.log.row(SESSION), null);
        await b.mrs.reread();
        assert.equal(b.mrs.summary(SESSION), undefined);
        assert.ok(b.moved.includes(SESSION), "each change of b's copy was told (the list rows go out)");
      });
    } finally {
      await a.mrs.close();
      await b.mrs.close();
      await a.log.close();
      await b.log.close();
      await state.close();
      await hookPrompts.close();
      await gl.close();
    }
  },
});
