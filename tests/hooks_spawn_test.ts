/**
 * Hooks that need a new session: a `/lvmh` comment on a merge request no session works on spawns one on the
 * MR's source branch with the daemon's default ask set (never "approve all" or nothing), and the comment
 * reaches the new session as soon as its plugin is online. The spawner is a recorder here (Docker-backed
 * spawns are covered by tests/e2e/spawn_*); the daemon, the hook route and the plugin socket are real.
 */
import assert from "node:assert/strict";
import { startInProcess } from "../testing/inproc.ts";
import { waitFor } from "../testing/daemon.ts";
import { connectAgent } from "../testing/agent.ts";
import { ageKeptPrompts, keptRows } from "../testing/kept_prompt.ts";
import { noteOnMergeRequest } from "../testing/fixtures/gitlab_hooks/payloads.ts";
import type { SpawnBody } from "../lib/protocol.ts";
import { UnavailableError } from "../lib/errors.ts";

Deno.test("hooks: a comment with no session spawns one and prompts it once online", async (t) => {
  await using d = await startInProcess({ env: { LVMH_SPAWN_ASK: "bash,edit" } });
  const app = d.daemon.app;
  const spawned: SpawnBody[] = [];
  const ids: string[] = [];
  app.spawner = {
    ...app.spawner,
    spawn(body, options) {
      spawned.push(body);
      ids.push(options!.sessionId!);
      return Promise.resolve({ sessionId: options!.sessionId!, containerId: "c1", jobId: "j1" });
    },
  };
  const secret = "gitlab-hook-secret-abcdefghij";
  await (await d.api("/api/hooks/gitlab", { method: "PUT", body: JSON.stringify({ secret }) })).body
    ?.cancel();

  await t.step("202 at once; the spawn asks for the source branch with the default ask set", async () => {
    const res = await d.fetch("/hooks/gitlab", {
      method: "POST",
      headers: {
        "x-gitlab-event": "Note Hook",
        "x-gitlab-token": secret,
        "content-type": "application/json",
      },
      body: JSON.stringify(noteOnMergeRequest("/lvmh add a changelog entry")),
    });
    assert.equal(res.status, 202);
    await res.body?.cancel();
    await waitFor(() => spawned.length === 1, "the spawn");
    assert.deepEqual(spawned[0], { repo: "group/proj", branch: "feature/x", ask: ["bash", "edit"] });
  });

  await t.step("the new session gets the comment once its plugin says hello", async () => {
    const a = await connectAgent(d, { sessionId: ids[0] });
    try {
      const p = await a.waitFrame((f) => f.type === "prompt", "the prompt after spawn");
      assert.match(String(p.message), /add a changelog entry/);
      await app.hooks.idle();
      const audit = await (await d.api("/api/audit?limit=1000")).json();
      const actions = audit.filter((e: { actor: string }) => e.actor === "hook:gitlab")
        .map((e: { action: string }) => e.action);
      assert.deepEqual(actions, ["hook.spawn", "hook.prompt"]);
    } finally {
      await a.close();
    }
  });
});

Deno.test("hooks: POST /hooks/generic with spawn answers the new session's id; a replay gets the same one", async () => {
  await using d = await startInProcess();
  const app = d.daemon.app;
  const ids: string[] = [];
  app.spawner = {
    ...app.spawner,
    spawn(_body, options) {
      ids.push(options!.sessionId!);
      return Promise.resolve({ sessionId: options!.sessionId!, containerId: "c1", jobId: "j1" });
    },
  };
  const send = () =>
    d.api("/hooks/generic", {
      method: "POST",
      headers: { "idempotency-key": "nightly-2026-12-01" },
      body: JSON.stringify({ message: "run the nightly checks", spawn: { repo: "group/proj" } }),
    });
  const first = await send();
  assert.equal(first.status, 202);
  const a = await first.json();
  assert.match(a.sessionId, /^[0-9a-f-]{36}$/);
  assert.equal(a.duplicate, undefined);
  const again = await (await send()).json();
  assert.deepEqual(again, { ok: true, sessionId: a.sessionId, spawning: true, duplicate: true });
  await waitFor(() => ids.length === 1, "the spawn");
  assert.deepEqual(ids, [a.sessionId], "the spawn runs under the id the hook answered with");
  const agent = await connectAgent(d, { sessionId: a.sessionId });
  try {
    const p = await agent.waitFrame((f) => f.type === "prompt", "the prompt");
    assert.equal(p.message, "run the nightly checks");
    await app.hooks.idle();
    assert.equal(ids.length, 1, "the replay spawned nothing");
    assert.equal(agent.frames.filter((f) => f.type === "prompt").length, 1);
  } finally {
    await agent.close();
  }
});

Deno.test("hooks: a hook's spawn waits for an unreachable engine and tries again", async () => {
  await using d = await startInProcess();
  const app = d.daemon.app;
  app.hooks.spawnRetryMs = 20;
  let calls = 0;
  app.spawner = {
    ...app.spawner,
    spawn(_body, options) {
      calls++;
      if (calls < 3) return Promise.reject(new UnavailableError("Docker is unreachable: no socket"));
      return Promise.resolve({ sessionId: options!.sessionId!, containerId: "c1", jobId: "j1" });
    },
  };
  const res = await d.api("/hooks/generic", {
    method: "POST",
    body: JSON.stringify({ message: "after the engine is back", spawn: { repo: "group/proj" } }),
  });
  const { sessionId } = await res.json();
  await waitFor(() => calls === 3, "the third try");
  const agent = await connectAgent(d, { sessionId });
  try {
    const p = await agent.waitFrame((f) => f.type === "prompt", "the prompt");
    assert.equal(p.message, "after the engine is back");
  } finally {
    await agent.close();
  }
});

Deno.test("hooks: prompts kept over a clean stop go out after the start; one older than 24 h is dropped", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "lvmh-hooks-keep-" });
  // In the daemon's file, or in its shared database with LVMH_TEST_STORE=postgres.
  const rows = () => keptRows(dataDir);
  try {
    const ids: string[] = [];
    {
      await using d = await startInProcess({ dataDir });
      const app = d.daemon.app;
      app.spawner = {
        ...app.spawner,
        spawn: (_body, options) =>
          Promise.resolve({ sessionId: options!.sessionId!, containerId: "c1", jobId: "j1" }),
      };
      for (const message of ["fresh one", "stale one"]) {
        const res = await d.api("/hooks/generic", {
          method: "POST",
          body: JSON.stringify({ message, spawn: { repo: "group/proj" } }),
        });
        ids.push((await res.json()).sessionId);
      }
      await waitFor(() => rows().every((r) => r.spawn === null), "both workers started");
      await d.stop();
      assert.match(d.output(), /2 hook prompt\(s\) wait for their sessions/);
    }
    ageKeptPrompts(dataDir, ids[1], 25 * 3600_000);
    await using d = await startInProcess({ dataDir });
    await waitFor(() => rows().length === 1, "the stale prompt dropped");
    assert.match(d.output(), new RegExp(`dropped a hook prompt for session ${ids[1]}: older than 24 h`));
    const agent = await connectAgent(d, { sessionId: ids[0] });
    try {
      const p = await agent.waitFrame((f) => f.type === "prompt", "the kept prompt");
      assert.equal(p.message, "fresh one");
      await waitFor(() => rows().length === 0, "nothing kept once sent");
    } finally {
      await agent.close();
    }
  } finally {
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});
