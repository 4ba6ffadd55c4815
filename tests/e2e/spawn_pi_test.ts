/**
 * The whole spawn path with nothing stubbed but the LLM and GitLab: the daemon builds `lvmh-worker` from
 * `docker/worker.Dockerfile` (BASE_IMAGE = the offline test base), clones the repo over HTTP with the token,
 * and the container's bridge runs the real pi 0.73.1 with the lvmh plugin against the fake LLM.
 */
import assert from "node:assert/strict";
import { waitFor } from "../../testing/daemon.ts";
import { dockerTest, uniq } from "../../testing/docker.ts";
import { post, startSpawnEnv } from "../../testing/spawn_env.ts";
import { modelsJson } from "../../testing/pi.ts";
import { startFakeLlm } from "../../testing/fixtures/fake_llm.mjs";
import { contextDigest } from "../../docker/context.ts";

type Session = { id: string; online: boolean; agent: boolean; repo: string | null; model: string | null };
type Event = { type: string; message?: { role: string; text?: string }; toolName?: string };

dockerTest("spawn: the real bridge and pi in a built worker image answer a REST prompt", async (t) => {
  const llm = await startFakeLlm();
  const dir = await Deno.makeTempDir({ prefix: "lvmh-spawn-pi-" });
  await Deno.writeTextFile(`${dir}/models.json`, modelsJson(llm.url));
  const image = `lvmh-test-pi-worker-${uniq()}:latest`;
  const env = await startSpawnEnv({ workerImage: image, env: { LVMH_MODELS_JSON: `${dir}/models.json` } });
  const { d, engine } = env;
  const repo = env.repos[0];
  const sessions = async () => (await (await d.api("/api/sessions")).json()) as Session[];
  let sessionId = "";
  let containerId = "";
  try {
    await t.step("connect, spawn: the image is built and the session says hello as an agent", async () => {
      await post(d, "/api/gitlab/connect", { token: env.pat }).then((r) => r.body?.cancel());
      assert.equal(await engine.imageExists(image), false);
      const digestBefore = await contextDigest();
      const res = await post(d, "/api/spawn", { repo });
      const body = await res.json();
      assert.equal(res.status, 201, JSON.stringify(body));
      ({ sessionId, containerId } = body);
      const built = await engine.imageInspect(image);
      // Others may edit the plugin or bridge while this runs: the label is the digest of before or after.
      const label = built.Config.Labels?.["lvmh.context"];
      assert.ok(
        label === digestBefore || label === await contextDigest(),
        "labelled with its sources' digest",
      );
      const s = await waitFor(
        async () => (await sessions()).find((x) => x.id === sessionId && x.online),
        "the bridge's hello",
        60_000,
      ).catch(async (error) => {
        const logs = await engine.containerLogs(containerId).catch(() => ({ stdout: "", stderr: "" }));
        throw new Error(`${error.message}\ncontainer output:\n${logs.stdout}${logs.stderr}`);
      });
      assert.equal(s.agent, true);
      assert.equal(s.repo, repo);
      assert.equal(s.model, "fake-model");
    });

    await t.step(
      "a prompt through REST runs a tool in the container, once approved, and is answered",
      async () => {
        const res = await post(d, `/api/sessions/${sessionId}/prompt`, { message: "run something" });
        assert.equal(res.status, 200);
        await res.body?.cancel();
        // Spawned sessions ask before bash by default (LVMH_SPAWN_ASK): the call waits until a person approves.
        const [approval] = await waitFor(
          async () => {
            const list = await (await d.api(`/api/sessions/${sessionId}/approvals?state=pending`)).json();
            return list.length ? list : null;
          },
          "the bash call waiting for approval",
          60_000,
        );
        assert.equal(approval.toolName, "bash");
        const decided = await post(d, `/api/approvals/${approval.id}`, { decision: "approve" });
        assert.equal(decided.status, 200);
        await decided.body?.cancel();
        const events = await waitFor(
          async () => {
            const list = (await (await d.api(`/api/sessions/${sessionId}/events`)).json()) as Event[];
            const done = list.some((e) =>
              e.type === "message_end" && e.message?.text?.includes("The command printed")
            );
            return done ? list : null;
          },
          "the answer",
          60_000,
        );
        assert.ok(events.some((e) => e.type === "message_end" && e.message?.role === "user"));
        assert.ok(events.some((e) => e.type === "tool_execution_end" && e.toolName === "bash"));
        assert.ok(events.some((e) => e.message?.text?.includes('The command printed: "hi"')));
      },
    );

    await t.step("stop removes the container and the session goes offline", async () => {
      const res = await d.api(`/api/sessions/${sessionId}/container`, { method: "DELETE" });
      assert.equal(res.status, 200);
      await res.body?.cancel();
      assert.deepEqual(await engine.containerList({ "lvmh.session": sessionId }), []);
      await waitFor(async () => (await sessions()).find((x) => x.id === sessionId && !x.online), "offline");
    });
  } finally {
    await env.close();
    await engine.imageRemove(image, true).catch(() => {});
    await llm.close();
    await Deno.remove(dir, { recursive: true });
  }
});
