/**
 * A prompt for a session a hook spawns is kept in SQLite from the 202 until it reaches the session, so a
 * SIGKILL of the daemon in between neither loses nor repeats it. Two kills in one run: a generic hook whose
 * worker had started (the restarted daemon finds the worker again and waits for it: no second spawn), and a
 * GitLab `/lvmh` comment whose spawn was cut short mid-clone (the restarted daemon spawns again under the
 * session id it already answered with). The daemon is the real `main.ts` in its own process; its Docker engine
 * is the fake engine served on a unix socket from this process (it outlives the daemon, as containers do);
 * this test plays each spawned session's plugin.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { freePort, startDaemon, waitFor } from "../testing/daemon.ts";
import { type AgentClient, connectAgent } from "../testing/agent.ts";
import { deferred, FakeEngine } from "../lib/spawn/_fake_engine.ts";
import { noteOnMergeRequest } from "../testing/fixtures/gitlab_hooks/payloads.ts";

const IMAGE = "lvmh-worker:hooks-restart";
const SECRET = "gitlab-hook-secret-restart-1";

Deno.test("hooks: a spawned session's prompt survives SIGKILL before it is online, and arrives once", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-hooks-spawn-restart-" });
  const fake = new FakeEngine();
  // No lvmh label: used as it is, no build.
  fake.images.set(IMAGE, null);
  const engine = Deno.serve({ path: `${dir}/docker.sock`, onListen() {} }, fake.handle);
  const port = freePort();
  const env = {
    LVMH_CONTAINER_DOCKER_SOCK: `${dir}/docker.sock`,
    LVMH_WORKER_IMAGE: IMAGE,
    LVMH_SPAWN_ASK: "bash",
  };
  const start = () => startDaemon({ dataDir: `${dir}/data`, port, env });
  const workers = (sessionId: string) =>
    fake.find({ "lvmh.session": sessionId, "lvmh.kind": "worker" }).map((c) => c.id);
  const kept = () => {
    const db = new DatabaseSync(`${dir}/data/lvmh.db`, { readOnly: true });
    try {
      return db.prepare("SELECT session_id, spawn FROM hook_prompts").all() as {
        session_id: string;
        spawn: string | null;
      }[];
    } finally {
      db.close();
    }
  };
  const agents: AgentClient[] = [];
  await Deno.mkdir(`${dir}/data`);
  let daemon = await start();
  try {
    const put = await daemon.api("/api/hooks/gitlab", {
      method: "PUT",
      body: JSON.stringify({ secret: SECRET }),
    });
    assert.equal(put.status, 200);
    await put.body?.cancel();

    // 1. A generic hook: 202 with the new session's id at once; its worker starts, the session is not online.
    const res = await daemon.api("/hooks/generic", {
      method: "POST",
      body: JSON.stringify({ message: "run the nightly checks", spawn: { repo: "group/other" } }),
    });
    assert.equal(res.status, 202);
    const generic = await res.json();
    assert.equal(generic.ok, true);
    assert.match(generic.sessionId, /^[0-9a-f-]{36}$/);
    const s1: string = generic.sessionId;
    await waitFor(
      () => kept().some((r) => r.session_id === s1 && r.spawn === null),
      "the worker of S1 started",
    );
    const s1Worker = workers(s1);
    assert.equal(s1Worker.length, 1);

    // 2. A GitLab comment whose spawn is held in its clone.
    const cloning = deferred();
    const held = deferred();
    fake.onClone = () => (cloning.resolve(), held.promise);
    const note = await fetch(`${daemon.url}/hooks/gitlab`, {
      method: "POST",
      headers: {
        "x-gitlab-event": "Note Hook",
        "x-gitlab-token": SECRET,
        "content-type": "application/json",
      },
      body: JSON.stringify(noteOnMergeRequest("/lvmh add a changelog entry")),
    });
    assert.equal(note.status, 202);
    await note.body?.cancel();
    await cloning.promise;
    const rows = kept();
    assert.equal(rows.length, 2, "both prompts are kept");
    const s2 = rows.find((r) => r.session_id !== s1)!.session_id;
    assert.deepEqual(JSON.parse(rows.find((r) => r.session_id === s2)!.spawn!), {
      repo: "group/proj",
      branch: "feature/x",
      ask: ["bash"],
    });
    const s2First = workers(s2);

    assert.equal((await daemon.kill("SIGKILL")).signal, "SIGKILL");
    await daemon.stop();
    fake.onClone = () => Promise.resolve();
    held.resolve();

    daemon = await start();
    // S2 is spawned again under its id (the half-made worker goes); S1's worker is found again, not replaced.
    await waitFor(() => kept().every((r) => r.spawn === null), "the cut-short spawn ran again", 20_000);
    assert.deepEqual(workers(s1), s1Worker, "S1 was not spawned twice");
    assert.equal(workers(s2).length, 1);
    assert.notDeepEqual(workers(s2), s2First, "S2's half-made worker was replaced");

    for (const [id, text] of [[s1, /nightly checks/], [s2, /add a changelog entry/]] as const) {
      const a = await connectAgent(daemon, { sessionId: id });
      agents.push(a);
      const p = await a.waitFrame((f) => f.type === "prompt", `the prompt of ${id}`);
      assert.match(String(p.message), text);
    }
    await waitFor(() => kept().length === 0, "no prompt is kept once delivered");

    // Exactly once: after another restart and reconnect, the next prompt each session gets is a person's.
    for (const a of agents.splice(0)) await a.close();
    await daemon.stop();
    daemon = await start();
    for (const id of [s1, s2]) {
      const a = await connectAgent(daemon, { sessionId: id });
      agents.push(a);
      const sent = await daemon.api(`/api/sessions/${id}/prompt`, {
        method: "POST",
        body: JSON.stringify({ message: `marker for ${id}` }),
      });
      assert.equal(sent.status, 200, await sent.clone().text());
      await sent.body?.cancel();
      const p = await a.waitFrame((f) => f.type === "prompt", `the marker of ${id}`);
      assert.equal(p.message, `marker for ${id}`, "the hook's prompt was not sent again");
    }
    const audit = await (await daemon.api("/api/audit?limit=1000")).json() as {
      action: string;
      sessionId: string | null;
    }[];
    for (const id of [s1, s2]) {
      const prompts = audit.filter((e) => e.action === "hook.prompt" && e.sessionId === id);
      assert.equal(prompts.length, 1, `one hook.prompt for ${id}`);
    }
  } finally {
    for (const a of agents) await a.close();
    await daemon.stop();
    await engine.shutdown();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
