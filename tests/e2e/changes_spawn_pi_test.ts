/**
 * A spawned session's changes with nothing stubbed but the LLM and GitLab: the real bridge and pi 0.73.1 in
 * a built worker image write a file with pi's own `write` tool (approved by a person if the ask set holds
 * it), and `GET /api/sessions/:id/changes` lists it in both scopes against the recorded base, computed by
 * the diff helper container.
 */
import assert from "node:assert/strict";
import { waitFor } from "../../testing/daemon.ts";
import { dockerTest, sharedWorkerImage, testEngine } from "../../testing/docker.ts";
import { post, startSpawnEnv } from "../../testing/spawn_env.ts";
import { modelsJson } from "../../testing/pi.ts";
import { startFakeLlm, WRITEFILE_CONTENT, WRITEFILE_PATH } from "../../testing/fixtures/fake_llm.mjs";
import type { ChangedFile, Changes } from "../../lib/changes/types.ts";

type Session = { id: string; online: boolean };
type Event = { type: string };

dockerTest("changes: a file pi writes in a spawned worker is listed by /changes", async () => {
  const llm = await startFakeLlm();
  const dir = await Deno.makeTempDir({ prefix: "lvmh-changes-pi-" });
  await Deno.writeTextFile(`${dir}/models.json`, modelsJson(llm.url));
  const image = await sharedWorkerImage(testEngine());
  const env = await startSpawnEnv({ workerImage: image, env: { LVMH_MODELS_JSON: `${dir}/models.json` } });
  const { d, engine } = env;
  try {
    await post(d, "/api/gitlab/connect", { token: env.pat }).then((r) => r.body?.cancel());
    const res = await post(d, "/api/spawn", { repo: env.repos[0] });
    const spawned = await res.json();
    assert.equal(res.status, 201, JSON.stringify(spawned));
    const { sessionId, containerId } = spawned;
    await waitFor(
      async () =>
        ((await (await d.api("/api/sessions")).json()) as Session[]).find((x) =>
          x.id === sessionId && x.online
        ),
      "the bridge's hello",
      60_000,
    ).catch(async (error) => {
      const logs = await engine.containerLogs(containerId).catch(() => ({ stdout: "", stderr: "" }));
      throw new Error(`${error.message}\ncontainer output:\n${logs.stdout}${logs.stderr}`);
    });
    const prompt = await post(d, `/api/sessions/${sessionId}/prompt`, { message: "WRITEFILE now" });
    assert.equal(prompt.status, 200);
    await prompt.body?.cancel();
    // Approve the write if the spawn ask set holds it; done once the run settled.
    await waitFor(
      async () => {
        const pending = await (await d.api(`/api/sessions/${sessionId}/approvals?state=pending`)).json();
        for (const a of pending as { id: string }[]) {
          await (await post(d, `/api/approvals/${a.id}`, { decision: "approve" })).body?.cancel();
        }
        const events = (await (await d.api(`/api/sessions/${sessionId}/events`)).json()) as Event[];
        return events.some((e) => e.type === "agent_settled");
      },
      "the run settled",
      60_000,
    );

    for (const scope of ["all", "uncommitted"]) {
      const r = await d.api(`/api/sessions/${sessionId}/changes?scope=${scope}`);
      const body = await r.json() as Changes;
      assert.equal(r.status, 200, JSON.stringify(body));
      const f = body.files.find((x: ChangedFile) => x.path === WRITEFILE_PATH);
      assert.deepEqual(
        [f?.status, f?.additions, f?.deletions],
        ["added", WRITEFILE_CONTENT.split("\n").length - 1, 0],
        JSON.stringify(body),
      );
      assert.ok(f!.diff!.endsWith(WRITEFILE_CONTENT.replace(/^/gm, "+").replace(/\+$/, "")));
      assert.equal(body.files.length, 1);
      assert.match(body.base!.sha, /^[0-9a-f]{40}$/);
    }
  } finally {
    await env.close();
    await llm.close();
    await Deno.remove(dir, { recursive: true });
  }
});
