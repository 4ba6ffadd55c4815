/**
 * `GET /api/sessions/:id/changes` and `/changes/file` on an in-process daemon with a scripted plugin: the
 * `changes` frame it sends, the answer handed back from the plugin's `command_result` (and stored without
 * it), the errors by kind (400, 404, 409 offline, 502 for a plugin that refuses or answers nothing usable).
 */
import assert from "node:assert/strict";
import { startInProcess } from "../testing/inproc.ts";
import { waitFor } from "../testing/daemon.ts";
import { connectAgent, type Frame } from "../testing/agent.ts";
import type { Changes } from "../lib/changes/types.ts";

const ANSWER: Changes = {
  scope: "all",
  base: { branch: "origin/main", sha: "a".repeat(40) },
  head: "b".repeat(40),
  branch: "main",
  stats: { files: 2, additions: 3, deletions: 1 },
  files: [
    {
      path: "a.txt",
      status: "modified",
      binary: false,
      additions: 2,
      deletions: 1,
      diff: "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1,2 @@\n-a\n+b\n+c\n",
    },
    { path: "yarn.lock", status: "added", binary: false, additions: 1, deletions: 0, collapsed: true },
  ],
  commits: [{ sha: "b".repeat(40), title: "work", author: "Ada", at: 1_700_000_000_000 }],
};

Deno.test("changes routes: through the plugin's command_result", async (t) => {
  await using d = await startInProcess();
  const a = await connectAgent(d, { sessionId: "ch1" });
  const nth = (n: number) =>
    a.waitFrame((f) => f.type === "changes" && a.frames.filter((x) => x.type === "changes").indexOf(f) === n);
  const get = async (path: string) => {
    const res = await d.api(path);
    return { status: res.status, body: await res.json() };
  };
  try {
    await t.step(
      "the plugin is asked, its answer is the route's, the log keeps the event without it",
      async () => {
        const pending = get("/api/sessions/ch1/changes?scope=uncommitted");
        const f: Frame = await nth(0);
        assert.equal(f.scope, "uncommitted");
        assert.equal(f.path, undefined);
        assert.equal(typeof f.commandId, "string");
        a.send("command_result", { commandId: f.commandId, ok: true, changes: ANSWER });
        const r = await pending;
        assert.equal(r.status, 200);
        assert.deepEqual(r.body, ANSWER);
        // The answer reaches the route before the event's batch commits: wait for the log to have it.
        let stored: Frame | undefined;
        await waitFor(async () => {
          const events = await (await d.api("/api/sessions/ch1/events")).json() as Frame[];
          stored = events.find((e) => e.type === "command_result" && e.commandId === f.commandId);
          return stored !== undefined;
        }, "the command_result is stored");
        assert.ok(stored);
        assert.equal("changes" in stored, false);
      },
    );

    await t.step("/changes/file asks for one path; a path that did not change is 404", async () => {
      const pending = get("/api/sessions/ch1/changes/file?path=yarn.lock");
      const f = await nth(1);
      assert.deepEqual([f.scope, f.path], ["all", "yarn.lock"]);
      const whole = {
        ...ANSWER.files[1],
        collapsed: undefined,
        diff: "diff --git a/yarn.lock b/yarn.lock\n",
      };
      a.send("command_result", { commandId: f.commandId, ok: true, changes: { ...ANSWER, files: [whole] } });
      const r = await pending;
      assert.equal(r.status, 200);
      assert.equal(r.body.diff, whole.diff);
      const missing = get("/api/sessions/ch1/changes/file?path=zzz");
      const g = await nth(2);
      a.send("command_result", { commandId: g.commandId, ok: true, changes: { ...ANSWER, files: [] } });
      assert.equal((await missing).status, 404);
    });

    await t.step(
      "a plugin's refusal is 502 with its message; an answer not of the shape is refused",
      async () => {
        const pending = get("/api/sessions/ch1/changes");
        const f = await nth(3);
        a.send("command_result", { commandId: f.commandId, ok: false, error: "git: not allowed" });
        const r = await pending;
        assert.deepEqual([r.status, r.body.error], [502, "git: not allowed"]);
        // A malformed answer fails the frame's schema: an error frame, and the request is not answered by it.
        a.send("command_result", { commandId: "x", ok: true, changes: { files: "nope" } });
        await a.waitFrame((x) => x.type === "error" && x.code === "bad_frame", "bad_frame");
      },
    );

    await t.step("requests asked together share one question to the plugin", async () => {
      const before = a.frames.filter((f) => f.type === "changes").length;
      const both = [get("/api/sessions/ch1/changes"), get("/api/sessions/ch1/changes")];
      const f = await nth(4);
      a.send("command_result", { commandId: f.commandId, ok: true, changes: ANSWER });
      const [x, y] = await Promise.all(both);
      assert.deepEqual([x.status, y.status], [200, 200]);
      assert.deepEqual(x.body, y.body);
      assert.equal(a.frames.filter((g) => g.type === "changes").length, before + 1);
    });

    await t.step("bad parameters are 400; an unknown session 404; an offline one 409", async () => {
      assert.equal((await get("/api/sessions/ch1/changes?scope=everything")).status, 400);
      assert.equal((await get("/api/sessions/ch1/changes/file")).status, 400);
      assert.equal((await get("/api/sessions/nope/changes")).status, 404);
      await a.close();
      const r = await get("/api/sessions/ch1/changes");
      assert.equal(r.status, 409, JSON.stringify(r.body));
    });

    await t.step("a plugin that goes away while asked: 409 at once, not at the timeout", async () => {
      const b = await connectAgent(d, { sessionId: "ch2" });
      const pending = get("/api/sessions/ch2/changes");
      await b.waitFrame((f) => f.type === "changes");
      const t0 = performance.now();
      await b.close();
      const r = await pending;
      assert.equal(r.status, 409, JSON.stringify(r.body));
      assert.ok(performance.now() - t0 < 5_000);
    });
  } finally {
    await a.close();
  }
});
