/**
 * Inbound hooks through the in-process daemon and a scripted plugin: the generic hook's auth, prompt, replay
 * and size rules; the GitLab hook's secret, `/lvmh` comments and failed pipelines reaching the session on that
 * repository as follow-ups, replays ignored, 413 past 1 MiB, unknown events 202; the hook named in the audit.
 */
import assert from "node:assert/strict";
import { startInProcess } from "../testing/inproc.ts";
import { waitFor } from "../testing/daemon.ts";
import { connectAgent, type Frame, sessionInfo } from "../testing/agent.ts";
import { failedPipeline, noteOnMergeRequest } from "../testing/fixtures/gitlab_hooks/payloads.ts";

const prompts = (frames: Frame[]) => frames.filter((f) => f.type === "prompt");

Deno.test("hooks: POST /hooks/generic", async (t) => {
  await using d = await startInProcess();
  const a = await connectAgent(d, { sessionId: "hg1" });
  const mint = async (name: string, role: string) =>
    (await (await d.api("/api/tokens", { method: "POST", body: JSON.stringify({ name, role }) })).json())
      .token;
  const operator = await mint("ci-bot", "operator");
  const viewer = await mint("watcher", "viewer");
  const post = (query: string, body: unknown, headers: Record<string, string> = {}) =>
    d.fetch(`/hooks/generic${query}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
  try {
    await t.step("no token 401, a viewer 403", async () => {
      const none = await post("", { sessionId: "hg1", message: "x" });
      assert.equal(none.status, 401);
      await none.body?.cancel();
      const v = await post(`?token=${viewer}`, { sessionId: "hg1", message: "x" });
      assert.equal(v.status, 403);
      await v.body?.cancel();
      assert.equal(prompts(a.frames).length, 0);
    });

    // How fast the 202 comes is measured by bench/hooks.ts, not asserted here (timings fail on a busy machine).
    await t.step("an operator's ?token= prompts the session: 202", async () => {
      const res = await post(`?token=${operator}`, {
        sessionId: "hg1",
        message: "deploy done",
        followUp: true,
      }, {
        "idempotency-key": "k-1",
      });
      assert.equal(res.status, 202);
      assert.deepEqual(await res.json(), { ok: true, sessionId: "hg1" });
      const p = await a.waitFrame((f) => f.type === "prompt", "the prompt");
      assert.equal(p.message, "deploy done");
      assert.equal(p.deliverAs, "followUp");
    });

    await t.step("the same Idempotency-Key again is acknowledged and ignored", async () => {
      const res = await post("", { sessionId: "hg1", message: "deploy done", followUp: true }, {
        authorization: `Bearer ${operator}`,
        "idempotency-key": "k-1",
      });
      assert.equal(res.status, 202);
      assert.equal((await res.json()).duplicate, true);
      const audit = await (await d.api("/api/audit?limit=1000")).json();
      if (!Array.isArray(audit)) throw new Error(JSON.stringify(audit));
      const rows = audit.filter((e: { action: string }) => e.action === "hook.prompt");
      assert.equal(rows.length, 1);
      assert.equal(rows[0].actor, "hook:ci-bot");
      assert.equal(prompts(a.frames).length, 1, "delivered once");
    });

    await t.step("bad bodies 400, unknown session 404, 2 MiB 413", async () => {
      const cases: [unknown, number][] = [
        ["{", 400],
        [{ message: "x" }, 400],
        [{ sessionId: "hg1", message: "  " }, 400],
        [{ sessionId: "nope", message: "x" }, 404],
        [{ sessionId: "hg1", message: "x".repeat(2 * 1024 * 1024) }, 413],
      ];
      for (const [body, status] of cases) {
        const res = await post(`?token=${operator}`, body);
        assert.equal(res.status, status, JSON.stringify(body).slice(0, 60));
        await res.body?.cancel();
      }
    });
  } finally {
    await a.close();
  }
});

Deno.test("hooks: POST /hooks/gitlab", async (t) => {
  await using d = await startInProcess();
  const a = await connectAgent(d, {
    sessionId: "hgl",
    session: sessionInfo("hgl", { repo: "git@gitlab.example:group/proj.git" }),
  });
  const secret = "gitlab-hook-secret-0123456789";
  const send = (event: string, body: unknown, headers: Record<string, string> = {}) =>
    d.fetch("/hooks/gitlab", {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-gitlab-event": event,
        "x-gitlab-token": secret,
        ...headers,
      },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
  try {
    await t.step("404 until an admin sets the secret", async () => {
      const res = await send("Note Hook", noteOnMergeRequest("/lvmh hi"));
      assert.equal(res.status, 404);
      await res.body?.cancel();
      const put = await d.api("/api/hooks/gitlab", { method: "PUT", body: JSON.stringify({ secret }) });
      assert.equal(put.status, 200);
      assert.equal((await put.json()).enabled, true);
      const status = await (await d.api("/api/hooks/gitlab")).json();
      assert.deepEqual(status, { enabled: true, source: "api", path: "/hooks/gitlab" });
    });

    await t.step("a wrong X-Gitlab-Token is 401", async () => {
      const res = await send("Note Hook", noteOnMergeRequest("/lvmh hi"), {
        "x-gitlab-token": "wrong-secret",
      });
      assert.equal(res.status, 401);
      await res.body?.cancel();
      assert.equal(prompts(a.frames).length, 0);
    });

    await t.step("a /lvmh comment on the MR is a follow-up into the session on that repository", async () => {
      const res = await send("Note Hook", noteOnMergeRequest("/lvmh please rename foo to bar"), {
        "x-gitlab-event-uuid": "uuid-note-1",
      });
      assert.equal(res.status, 202);
      const p = await a.waitFrame((f) => f.type === "prompt", "the follow-up");
      assert.equal(p.deliverAs, "followUp");
      assert.match(String(p.message), /@alice/);
      assert.match(String(p.message), /please rename foo to bar/);
      assert.match(String(p.message), /merge_requests\/7/);
    });

    await t.step("the same event again (X-Gitlab-Event-UUID) is ignored", async () => {
      const res = await send("Note Hook", noteOnMergeRequest("/lvmh please rename foo to bar"), {
        "x-gitlab-event-uuid": "uuid-note-1",
      });
      assert.equal(res.status, 202);
      assert.equal((await res.json()).duplicate, true);
      await d.daemon.app.hooks.idle();
      assert.equal(prompts(a.frames).length, 1);
    });

    await t.step("a failed pipeline is a follow-up naming the failed jobs and the link", async () => {
      const res = await send("Pipeline Hook", failedPipeline("feature/x"), { "idempotency-key": "pipe-31" });
      assert.equal(res.status, 202);
      await res.body?.cancel();
      const p = await waitFor(() => prompts(a.frames)[1], "the pipeline follow-up");
      assert.match(String(p.message), /unit-tests/);
      assert.doesNotMatch(String(p.message), /build-image/);
      assert.match(String(p.message), /pipelines\/31/);
    });

    await t.step("comments without /lvmh and unknown events are 202 and ignored; 2 MiB is 413", async () => {
      for (
        const [event, body] of [["Note Hook", noteOnMergeRequest("looks good")], ["Push Hook", { a: 1 }]]
      ) {
        const res = await send(event as string, body);
        assert.equal(res.status, 202);
        assert.equal((await res.json()).ignored, true);
      }
      const big = await send("Note Hook", JSON.stringify({ pad: "x".repeat(2 * 1024 * 1024) }));
      assert.equal(big.status, 413);
      await big.body?.cancel();
      await d.daemon.app.hooks.idle();
      assert.equal(prompts(a.frames).length, 2);
    });

    await t.step("the audit names the hook as the actor", async () => {
      const audit = await (await d.api("/api/audit?limit=1000")).json();
      if (!Array.isArray(audit)) throw new Error(JSON.stringify(audit));
      const rows = audit.filter((e: { action: string }) => e.action === "hook.prompt");
      assert.equal(rows.length, 2);
      assert.ok(
        rows.every((r: { actor: string; sessionId: string }) =>
          r.actor === "hook:gitlab" && r.sessionId === "hgl"
        ),
      );
    });
  } finally {
    await a.close();
  }
});

Deno.test("hooks: an admin clears the GitLab hook secret, and the hook answers 404 again", async () => {
  await using d = await startInProcess();
  const secret = "gitlab-hook-secret-to-clear-1";
  const hook = () =>
    d.fetch("/hooks/gitlab", {
      method: "POST",
      headers: {
        "x-gitlab-event": "Note Hook",
        "x-gitlab-token": secret,
        "content-type": "application/json",
      },
      body: JSON.stringify(noteOnMergeRequest("/lvmh hi")),
    });
  const put = await d.api("/api/hooks/gitlab", { method: "PUT", body: JSON.stringify({ secret }) });
  assert.equal(put.status, 200);
  await put.body?.cancel();
  const on = await hook();
  assert.equal(on.status, 202);
  await on.body?.cancel();
  const del = await d.api("/api/hooks/gitlab", { method: "DELETE" });
  assert.equal(del.status, 200);
  assert.deepEqual(await del.json(), { ok: true, enabled: false, overriddenByEnv: false });
  assert.deepEqual(await (await d.api("/api/hooks/gitlab")).json(), {
    enabled: false,
    source: null,
    path: "/hooks/gitlab",
  });
  const off = await hook();
  assert.equal(off.status, 404);
  await off.body?.cancel();
  const audit = await (await d.api("/api/audit?limit=1000")).json();
  assert.ok(audit.some((e: { action: string }) => e.action === "hook.gitlab.secret.clear"));
});
