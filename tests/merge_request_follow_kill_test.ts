/**
 * A failed pipeline's follow-up survives a daemon SIGKILL: the real `main.ts` in its own process records the
 * failure on the session's merge request and keeps the follow-up (in one transaction) while the session's run
 * is active; killed before the run ended, the next start still delivers it once the session is back and idle,
 * and the same pipeline reported again is not prompted again.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { freePort, startDaemon, waitFor } from "../testing/daemon.ts";
import { type AgentClient, connectAgent } from "../testing/agent.ts";
import { keptIds } from "../testing/kept_prompt.ts";
import { failedPipeline } from "../testing/fixtures/gitlab_hooks/payloads.ts";
import { Feature } from "../lib/wire.ts";

const SESSION = "c0ffee12-0000-4000-8000-000000000000";
const BRANCH = "lvmh/c0ffee12";
const PROJECT = "group/app";
const HOOK_SECRET = "kill-hook-secret-0123456789";

/** The merge request lvmh opened for the session (written while the daemon is stopped). */
function recordMergeRequest(dataDir: string): void {
  const db = new DatabaseSync(`${dataDir}/lvmh.db`);
  try {
    db.prepare(
      `INSERT INTO session_merge_requests(sessionId, repo, sourceBranch, pushedSha, iid, webUrl, state, targetBranch,
         title, updatedAt, refreshedAt) VALUES (?, ?, ?, ?, 4, 'http://gitlab.example/group/app/-/merge_requests/4',
         'opened', 'main', 'Fix it', ?, ?)`,
    ).run(SESSION, PROJECT, BRANCH, "b".repeat(40), Date.now(), Date.now());
  } finally {
    db.close();
  }
}

Deno.test("merge requests: a failed pipeline's follow-up kept during a run survives SIGKILL, sent once", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-mr-kill-" });
  const port = freePort();
  const start = () => startDaemon({ dataDir: dir, port, env: { LVMH_GITLAB_HOOK_SECRET: HOOK_SECRET } });
  const agents: AgentClient[] = [];
  const connect = async () => {
    const a = await connectAgent(daemon, { sessionId: SESSION, hello: { features: [Feature.promptOnce] } });
    agents.push(a);
    return a;
  };
  const hook = async (id: number, key: string) => {
    const body = failedPipeline(BRANCH);
    body.object_attributes.id = id;
    body.project.path_with_namespace = PROJECT;
    const res = await fetch(`${daemon.url}/hooks/gitlab`, {
      method: "POST",
      headers: {
        "x-gitlab-event": "Pipeline Hook",
        "x-gitlab-token": HOOK_SECRET,
        "idempotency-key": key,
        "content-type": "application/json",
      },
      body: JSON.stringify(body),
    });
    assert.equal(res.status, 202);
    assert.deepEqual(await res.json(), { ok: true });
  };
  let daemon = await start();
  try {
    await (await connect()).close();
    await daemon.stop();
    recordMergeRequest(dir);
    daemon = await start();

    const a1 = await connect();
    a1.send("agent_start");
    await waitFor(
      async () => (await (await daemon.api(`/api/sessions/${SESSION}`)).json()).state === "running",
      "the run started",
    );
    await hook(60, "p-60");
    await waitFor(() => keptIds(dir).length === 1, "the follow-up kept");
    const view = await (await daemon.api(`/api/sessions/${SESSION}/merge-request`)).json();
    assert.equal(view.pipeline.status, "failed");
    assert.equal(a1.frames.filter((f) => f.type === "prompt").length, 0, "not during the run");

    assert.equal((await daemon.kill("SIGKILL")).signal, "SIGKILL");
    await daemon.stop();
    daemon = await start();
    const a2 = await connect();
    const p = await a2.waitFrame((f) => f.type === "prompt", "the follow-up after the restart");
    assert.equal(p.deliverAs, "followUp");
    assert.match(String(p.message), /pipeline #60 of merge request !4 \(lvmh\/c0ffee12\) failed/);
    a2.send("command_result", { commandId: p.promptId, ok: true });
    await waitFor(() => keptIds(dir).length === 0, "taken");

    // The same pipeline reported again (a new delivery key) is not prompted again, before or after a restart.
    await hook(60, "p-60-again");
    assert.equal(keptIds(dir).length, 0);
    await daemon.stop();
    daemon = await start();
    const a3 = await connect();
    const marker = await daemon.api(`/api/sessions/${SESSION}/prompt`, {
      method: "POST",
      body: JSON.stringify({ message: "a person's prompt" }),
    });
    assert.equal(marker.status, 200);
    await marker.body?.cancel();
    const next = await a3.waitFrame((f) => f.type === "prompt", "the next prompt");
    assert.equal(next.message, "a person's prompt", "the pipeline follow-up was not sent again");
    const after = await (await daemon.api(`/api/sessions/${SESSION}/merge-request`)).json();
    assert.equal(after.pipeline.id, 60);
  } finally {
    for (const a of agents) await a.close().catch(() => {});
    await daemon.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
