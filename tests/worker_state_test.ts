/**
 * A spawned session's worker state through the daemon, without an engine: the row's `container` (null for a
 * terminal session), a crash's `exitCode`/`reason`, the kept logs as text, the session page's Worker panel
 * with Resume and Discard, and the answers of resume/discard/logs/bundle when Docker is unreachable.
 */
import assert from "node:assert/strict";
import { startInProcess } from "../testing/inproc.ts";
import { ensureBundle } from "../lib/bundle.ts";
import { connectAgent, sessionInfo } from "../testing/agent.ts";
import { DatabaseSync } from "node:sqlite";
import { ContainerStates } from "../lib/spawn/containers.ts";
import { cliEnv, lvmh } from "../testing/cli.ts";

Deno.test("worker state: rows, logs, the session page's panel, and no engine", async () => {
  await ensureBundle();
  // The daemon's own table, written as the spawner would after an OOM kill, before the daemon reads it.
  const dataDir = await Deno.makeTempDir({ prefix: "lvmh-worker-state-" });
  const db = new DatabaseSync(`${dataDir}/lvmh.db`);
  new ContainerStates(db).set("spawned", "g/p", "crashed", {
    end: { exitCode: 137, reason: "oom" },
    logs: "line one\nline two\nKilled\n",
  });
  db.close();
  const daemon = await startInProcess({
    dataDir,
    env: { LVMH_CONTAINER_DOCKER_SOCK: "/nonexistent/docker.sock" },
  });
  const agent = await connectAgent(daemon, { sessionId: "term", session: sessionInfo("term") });
  try {
    const { app } = daemon.daemon;
    app.sessions.register({
      id: "spawned",
      name: "spawned one",
      cwd: "/workspace",
      model: null,
      provider: null,
      agent: true,
      repo: "g/p",
      startedAt: Date.now(),
    });

    const rows = await (await daemon.api("/api/sessions")).json() as Record<string, unknown>[];
    const term = rows.find((r) => r.id === "term")!;
    const spawned = rows.find((r) => r.id === "spawned")!;
    assert.equal(term.container, null);
    assert.ok(!("exitCode" in term));
    assert.deepEqual([spawned.container, spawned.exitCode, spawned.reason], ["crashed", 137, "oom"]);

    const logs = await daemon.api("/api/sessions/spawned/container/logs?tail=2");
    assert.equal(logs.status, 200);
    assert.match(logs.headers.get("content-type")!, /^text\/plain/);
    assert.equal(await logs.text(), "line two\nKilled\n");
    for (const tail of ["0", "1001", "x"]) {
      const bad = await daemon.api(`/api/sessions/spawned/container/logs?tail=${tail}`);
      assert.equal(bad.status, 400);
      await bad.body?.cancel();
    }
    const none = await daemon.api("/api/sessions/term/container/logs");
    assert.equal(none.status, 404);
    await none.body?.cancel();

    const login = await daemon.fetch("/login", {
      method: "POST",
      body: JSON.stringify({ token: daemon.token }),
      headers: { "content-type": "application/json", origin: daemon.url },
    });
    const cookie = (login.headers.get("set-cookie") ?? "").split(";")[0];
    await login.body?.cancel();
    const page = await (await daemon.fetch("/sessions/spawned", { headers: { cookie } })).text();
    assert.match(page, /data-container="crashed"/);
    assert.match(page, /out of memory/);
    assert.match(page, />Resume</);
    assert.match(page, />Discard…</);
    const list = await (await daemon.fetch("/", { headers: { cookie } })).text();
    assert.match(list, /data-group="stopped"/, "the list shows it apart from live and offline sessions");
    assert.match(list, /Stopped or crashed: resumable/);
    const termPage = await (await daemon.fetch("/sessions/term", { headers: { cookie } })).text();
    assert.ok(!termPage.includes("data-container"), "no worker panel for a terminal session");

    const cases: [string, RequestInit, number][] = [
      ["/api/sessions/spawned/resume", { method: "POST", body: "{}" }, 503],
      ["/api/sessions/term/resume", { method: "POST", body: "{}" }, 409],
      ["/api/sessions/nobody/resume", { method: "POST", body: "{}" }, 404],
      ["/api/sessions/spawned", { method: "DELETE" }, 503],
      ["/api/sessions/nobody/bundle", {}, 404],
      ["/api/sessions/term/bundle", {}, 404],
    ];
    for (const [path, init, status] of cases) {
      const res = await daemon.api(path, init);
      assert.equal(res.status, status, `${init.method ?? "GET"} ${path}: ${await res.text()}`);
    }
    assert.equal(app.sessions.get("spawned")?.container, "crashed", "nothing was removed without the engine");

    // The CLI's commands for the same routes.
    const home = await Deno.makeTempDir({ prefix: "lvmh-worker-cli-" });
    try {
      const env = cliEnv(home, { url: daemon.url, token: daemon.token });
      assert.deepEqual(await lvmh(env, ["logs", "spawned", "--tail", "2"]), {
        code: 0,
        stdout: "line two\nKilled\n",
        stderr: "",
      });
      assert.equal((await lvmh(env, ["logs", "spawned", "--tail", "0"])).code, 2);
      const listed = await lvmh(env, ["sessions"]);
      assert.match(listed.stdout, /spawned\s+crashed \(oom\)/);
      const resumed = await lvmh(env, ["resume", "spawned"]);
      assert.equal(resumed.code, 1);
      assert.match(resumed.stderr, /Docker/);
      const bundle = await lvmh(env, ["bundle", "term"]);
      assert.equal(bundle.code, 1);
      assert.match(bundle.stderr, /no working copy/);
    } finally {
      await Deno.remove(home, { recursive: true });
    }
  } finally {
    await agent.close();
    await daemon.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
});
