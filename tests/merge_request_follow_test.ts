/**
 * Following a session's merge request through the in-process daemon, the loopback GitLab and a scripted plugin:
 * the list's row (`session_update`) shows `!1 · pipeline failed`, the GitLab hook's pipeline event writes the
 * record at once and fires `merge_request.pipeline` (once per pipeline) on an outbound webhook, a failed pipeline
 * becomes a follow-up only once the run ended and at most 3 times per merge request, a merge request event reads
 * it again (`merge_request.merged`), and the review comments are listed and sent to the agent fenced. The push
 * itself (Docker helpers) is replaced by a fake: the real one is tested in tests/e2e/merge_request_test.ts.
 */
import assert from "node:assert/strict";
import { startInProcess } from "../testing/inproc.ts";
import { waitFor } from "../testing/daemon.ts";
import { connectAgent, connectBrowser, type Frame } from "../testing/agent.ts";
import { startGitlabFixture } from "../testing/fixtures/gitlab_fixture.ts";
import { failedPipeline } from "../testing/fixtures/gitlab_hooks/payloads.ts";
import { startReceiver } from "../testing/fixtures/webhook_receiver.ts";
import { cliEnv, lvmh } from "../testing/cli.ts";
import { generateSecret } from "../lib/webhooks/signing.ts";
import type { ShipWork } from "../lib/ship_work.ts";
import { keptIds } from "../testing/kept_prompt.ts";

const TOKEN = "fixture-token-follow";
const PROJECT = "group/app";
const SESSION = "5e55a0b1-0000-4000-8000-000000000000";
const BRANCH = "lvmh/5e55a0b1";
const HOOK_SECRET = "follow-hook-secret-0123456789";
const BASE = "a".repeat(40);

/** The Docker steps of a push, as data: one uncommitted change, pushed. */
const fakeWork: ShipWork = {
  inspect: () => Promise.resolve({ head: BASE, dirty: true, containsBase: true, patch: "" }),
  commit: () => Promise.resolve({ head: "b".repeat(40), committed: true, patch: "" }),
  bundle: () => Promise.resolve({ head: "b".repeat(40), bundle: new Uint8Array([1]) }),
  push: () => Promise.resolve(),
};

const prompts = (frames: Frame[]) => frames.filter((f) => f.type === "prompt");

/** A pipeline event on the session's branch, as GitLab sends it. */
function pipeline(id: number, status: string) {
  const p = failedPipeline(BRANCH);
  p.object_attributes.id = id;
  p.object_attributes.status = status;
  p.object_attributes.url = `http://gitlab.example/${PROJECT}/-/pipelines/${id}`;
  p.project.path_with_namespace = PROJECT;
  return p;
}

Deno.test("merge requests are followed: list row, hook events, notifications, capped pipeline follow-ups, comments", async (t) => {
  const gl = startGitlabFixture({
    token: TOKEN,
    username: "lvmh-bot",
    projects: [{ path: PROJECT, lastActivityAt: "2026-01-01" }],
  });
  await using d = await startInProcess({
    env: { LVMH_GITLAB_URL: gl.url, LVMH_GITLAB_HOOK_SECRET: HOOK_SECRET },
  });
  const app = d.daemon.app;
  // The push goes through the fake: only following is under test here.
  (app.mergeRequests as unknown as { deps: { work: ShipWork } }).deps.work = fakeWork;
  await app.gitlab.connect(TOKEN);
  const secret = generateSecret();
  const receiver = startReceiver({ secret });
  const a = await connectAgent(d, {
    sessionId: SESSION,
    session: {
      id: SESSION,
      name: "shipper",
      cwd: "/workspace",
      model: null,
      provider: null,
      agent: true,
      repo: PROJECT,
      startedAt: Date.now(),
    },
  });
  const browser = await connectBrowser(d.browserUrl);
  const hook = async (event: string, body: unknown, key: string) => {
    const res = await d.fetch("/hooks/gitlab", {
      method: "POST",
      headers: {
        "x-gitlab-event": event,
        "x-gitlab-token": HOOK_SECRET,
        "idempotency-key": key,
        "content-type": "application/json",
      },
      body: JSON.stringify(body),
    });
    assert.equal(res.status, 202);
    return await res.json();
  };
  /** Follow-ups kept for later (a kept one is decided in the same transaction as the record's change). */
  // In the daemon's file, or with `LVMH_TEST_STORE=postgres` in the shared database.
  const kept = () => keptIds(d.dataDir).length;
  const delivered = (type: string) => receiver.received.filter((r) => r.body.type === type);
  try {
    app.workspaces.record(SESSION, { repo: PROJECT, baseBranch: "main", baseSha: BASE, branch: BRANCH });
    const wh = await d.api("/api/webhooks", {
      method: "POST",
      body: JSON.stringify({
        url: receiver.url,
        events: ["merge_request.pipeline", "merge_request.merged"],
        secret,
      }),
    });
    assert.equal(wh.status, 201, await wh.clone().text());
    await wh.body?.cancel();

    await t.step("the list's row carries the merge request once it is opened", async () => {
      const res = await d.api(`/api/sessions/${SESSION}/merge-request`, {
        method: "POST",
        body: JSON.stringify({ title: "Add a" }),
      });
      assert.equal(res.status, 201, await res.clone().text());
      await res.body?.cancel();
      await browser.waitSessions(
        (s) => JSON.stringify(s.get(SESSION)?.mergeRequest) === '{"iid":1,"state":"opened","pipeline":null}',
        "the row's merge request",
      );
      const list = await (await d.api("/api/sessions")).json() as { id: string; mergeRequest?: unknown }[];
      assert.deepEqual(list.find((s) => s.id === SESSION)?.mergeRequest, {
        iid: 1,
        state: "opened",
        pipeline: null,
      });
    });

    await t.step(
      "a failed pipeline during a run: recorded and announced at once, prompted after the run",
      async () => {
        a.send("agent_start");
        await waitFor(
          async () => (await (await d.api(`/api/sessions/${SESSION}`)).json()).state === "running",
          "the run started",
        );
        assert.deepEqual(await hook("Pipeline Hook", pipeline(50, "failed"), "p-50"), { ok: true });
        const view = await (await d.api(`/api/sessions/${SESSION}/merge-request`)).json();
        assert.deepEqual(view.pipeline, {
          id: 50,
          status: "failed",
          webUrl: `http://gitlab.example/${PROJECT}/-/pipelines/50`,
        });
        await browser.waitSessions(
          (s) => (s.get(SESSION)?.mergeRequest as { pipeline?: string })?.pipeline === "failed",
          "the row says pipeline failed",
        );
        const sent = await waitFor(() => delivered("merge_request.pipeline")[0], "the webhook");
        assert.equal(sent.verified, true);
        assert.equal(sent.body.sessionId, SESSION);
        assert.equal(sent.body.data.status, "failed");
        assert.equal(sent.body.data.iid, 1);
        assert.equal(sent.body.data.pipelineId, 50);
        assert.deepEqual(sent.body.data.failedJobs, ["unit-tests"]);
        assert.equal(kept(), 1, "kept for after the run");
        assert.equal(prompts(a.frames).length, 0, "never while the run is active");
        a.send("agent_end");
        const p = await a.waitFrame((f) => f.type === "prompt", "the follow-up after the run");
        assert.equal(p.deliverAs, "followUp");
        assert.match(String(p.message), /pipeline #50 of merge request !1 \(lvmh\/5e55a0b1\) failed/);
        assert.match(String(p.message), /unit-tests/);
      },
    );

    await t.step(
      "the same pipeline again is neither announced nor prompted again; at most 3 prompts",
      async () => {
        await hook("Pipeline Hook", pipeline(50, "failed"), "p-50-again");
        for (const id of [51, 52, 53]) {
          await hook("Pipeline Hook", pipeline(id, "failed"), `p-${id}`);
          await waitFor(
            () => delivered("merge_request.pipeline").length === id - 49,
            `pipeline ${id} announced`,
          );
        }
        await waitFor(() => prompts(a.frames).length === 3 && kept() === 0, "three follow-ups");
        assert.equal(prompts(a.frames).length, 3, "the fourth failed pipeline is not prompted");
        assert.deepEqual(
          delivered("merge_request.pipeline").map((r) => r.body.data.pipelineId),
          [50, 51, 52, 53],
        );
      },
    );

    await t.step("a succeeded pipeline is announced, and no follow-up", async () => {
      await hook("Pipeline Hook", pipeline(54, "success"), "p-54");
      await waitFor(() => delivered("merge_request.pipeline").length === 5, "the success");
      assert.equal(delivered("merge_request.pipeline")[4].body.data.status, "success");
      assert.equal(prompts(a.frames).length, 3);
    });

    let inline = 0;
    let general = 0;
    await t.step("GET .../comments: people's notes and inline ones, no system or own notes", async () => {
      const mr = gl.mergeRequests[0];
      mr.diffs = [{
        old_path: "src/a.ts",
        new_path: "src/a.ts",
        diff: "@@ -1,2 +1,2 @@\n keep\n-old\n+new\n",
      }];
      gl.addNote(mr, { body: "added 1 commit", system: true });
      general = gl.addNote(mr, { body: "Please add a test", author: "alice" }).id;
      inline = gl.addNote(mr, {
        body: "Not like this:\n````\n```\nrm -rf /\n```\n````",
        author: "bob",
        position: { new_path: "src/a.ts", new_line: 2 },
      }).id;
      gl.addNote(mr, { body: "noted", author: "lvmh-bot" });
      const res = await d.api(`/api/sessions/${SESSION}/merge-request/comments`);
      assert.equal(res.status, 200);
      const { comments } = await res.json();
      assert.deepEqual(comments.map((c: { id: number }) => c.id), [general, inline]);
      assert.equal(comments[1].path, "src/a.ts");
      assert.equal(comments[1].line, 2);
      assert.equal(comments[1].diffHunk, "@@ -1,2 +1,2 @@\n keep\n-old\n+new");
    });

    await t.step(
      "POST .../comments/send: one fenced follow-up, audited; 400 for a stranger's id",
      async () => {
        const bad = await d.api(`/api/sessions/${SESSION}/merge-request/comments/send`, {
          method: "POST",
          body: JSON.stringify({ ids: [inline, 1] }),
        });
        assert.equal(bad.status, 400);
        await bad.body?.cancel();
        const res = await d.api(`/api/sessions/${SESSION}/merge-request/comments/send`, {
          method: "POST",
          body: JSON.stringify({ ids: [inline, general], note: "Both, please." }),
        });
        assert.equal(res.status, 200, await res.clone().text());
        const { ok, promptId } = await res.json();
        assert.equal(ok, true);
        const p = await a.waitFrame((f) => f.type === "prompt" && f.promptId === promptId, "the comments");
        assert.equal(p.deliverAs, "followUp");
        const text = String(p.message);
        assert.match(text, /Both, please\./);
        assert.ok(text.indexOf("Please add a test") < text.indexOf("rm -rf"), "in the merge request's order");
        assert.match(text, /by @bob on "src\/a\.ts" line 2:/);
        assert.match(text, /`````\nNot like this:\n````\n```\nrm -rf \/\n```\n````\n`````/);
        const audit = await (await d.api("/api/audit?limit=1000")).json() as {
          action: string;
          detail: unknown;
        }[];
        const row = audit.find((e) => e.action === "merge_request.comments");
        assert.deepEqual(row?.detail, { iid: 1, ids: [inline, general], promptId });
      },
    );

    await t.step("lvmh mr ID --comments lists them; --send sends the picked ones", async () => {
      const dir = await Deno.makeTempDir({ prefix: "lvmh-cli-mr-" });
      try {
        const env = cliEnv(dir, d);
        const listed = await lvmh(env, ["mr", SESSION, "--comments"]);
        assert.equal(listed.code, 0, listed.stderr);
        assert.match(listed.stdout, new RegExp(`^#${general} @alice \\S+\\n    Please add a test\\n`));
        assert.match(listed.stdout, new RegExp(`#${inline} @bob src/a\\.ts:2 `));
        const sent = await lvmh(env, ["mr", SESSION, "--send", String(general), "--note", "Just this one."]);
        assert.equal(sent.code, 0, sent.stderr);
        const promptId = /^sent (\S+)\n$/.exec(sent.stdout)?.[1];
        const p = await a.waitFrame(
          (f) => f.type === "prompt" && f.promptId === promptId,
          "the CLI's follow-up",
        );
        assert.match(String(p.message), /Just this one\.[\s\S]*Please add a test/);
        const bad = await lvmh(env, ["mr", SESSION, "--send", "x"]);
        assert.equal(bad.code, 2);
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    });

    await t.step(
      "a plain note or a merge reads the merge request again; merged is announced once",
      async () => {
        gl.mergeRequests[0].state = "merged";
        const note = {
          object_kind: "note",
          user: { username: "alice" },
          project: { path_with_namespace: PROJECT },
          object_attributes: { note: "LGTM", noteable_type: "MergeRequest" },
          merge_request: { iid: 1, source_branch: BRANCH },
        };
        assert.deepEqual(await hook("Note Hook", note, "n-1"), { ok: true });
        await waitFor(() => delivered("merge_request.merged").length === 1, "merged");
        const merged = delivered("merge_request.merged")[0].body;
        assert.equal(merged.data.iid, 1);
        assert.equal(merged.data.title, "Add a");
        const mrEvent = {
          object_kind: "merge_request",
          project: { path_with_namespace: PROJECT },
          object_attributes: { iid: 1, source_branch: BRANCH, state: "merged", action: "merge" },
        };
        assert.deepEqual(await hook("Merge Request Hook", mrEvent, "m-1"), { ok: true });
        await browser.waitSessions(
          (s) => (s.get(SESSION)?.mergeRequest as { state?: string })?.state === "merged",
          "the row says merged",
        );
        const view = await (await d.api(`/api/sessions/${SESSION}/merge-request`)).json();
        assert.equal(view.state, "merged");
        assert.equal(view.notes, 3);
        assert.equal(delivered("merge_request.merged").length, 1);
        const other = await hook("Merge Request Hook", {
          ...mrEvent,
          object_attributes: { ...mrEvent.object_attributes, iid: 9, source_branch: "feature/y" },
        }, "m-2");
        assert.deepEqual(other, { ok: true, ignored: true });
      },
    );

    await t.step("404 without a merge request; 409 offline; a viewer may read but not send", async () => {
      const viewer = (await (await d.api("/api/tokens", {
        method: "POST",
        body: JSON.stringify({ name: "watcher", role: "viewer" }),
      })).json()).token;
      const asViewer = (path: string, init: RequestInit = {}) =>
        d.fetch(path, {
          ...init,
          headers: { authorization: `Bearer ${viewer}`, "content-type": "application/json" },
        });
      const read = await asViewer(`/api/sessions/${SESSION}/merge-request/comments`);
      assert.equal(read.status, 200);
      await read.body?.cancel();
      const send = await asViewer(`/api/sessions/${SESSION}/merge-request/comments/send`, {
        method: "POST",
        body: JSON.stringify({ ids: [general] }),
      });
      assert.equal(send.status, 403);
      await send.body?.cancel();
      const other = await connectAgent(d, { sessionId: "no-mr-session" });
      const none = await d.api(`/api/sessions/no-mr-session/merge-request/comments`);
      assert.equal(none.status, 404);
      await none.body?.cancel();
      const noneSend = await d.api(`/api/sessions/no-mr-session/merge-request/comments/send`, {
        method: "POST",
        body: JSON.stringify({ ids: [general] }),
      });
      assert.equal(noneSend.status, 404);
      await noneSend.body?.cancel();
      await other.close();
      await a.close();
      await waitFor(() => !app.sessions.isOnline(SESSION), "offline");
      const offline = await d.api(`/api/sessions/${SESSION}/merge-request/comments/send`, {
        method: "POST",
        body: JSON.stringify({ ids: [general] }),
      });
      assert.equal(offline.status, 409);
      await offline.body?.cancel();
    });
  } finally {
    await browser.close();
    await a.close();
    await receiver.close();
    await gl.close();
  }
});
