/**
 * The real bridge in the real worker image, end to end: the daemon builds docker/worker.Dockerfile (on the
 * offline base image: host Node 20, so pi 0.73.1 from docker/bridge/node_modules), spawns a session from a
 * GitLab fixture repo, the container's pi talks to the fake LLM on the host's loopback (host network), a
 * REST prompt is answered, and stopping the container ends the session with `bye`.
 */
import assert from "node:assert/strict";
import { waitFor } from "../../testing/daemon.ts";
import { startFakeLlm } from "../../testing/fixtures/fake_llm.mjs";
import { cleanupDocker, dockerTest, ensureBaseImage, uniq } from "../../testing/docker.ts";
import { post, startSpawnEnv } from "../../testing/spawn_env.ts";
import { allEvents, modelsJson } from "../../testing/pi.ts";

type Ev = Record<string, unknown> & { seq: number; type: string };

dockerTest("bridge in the worker image: spawned pi answers a prompt and says bye when stopped", async () => {
  await ensureBaseImage();
  const llm = await startFakeLlm();
  const dir = await Deno.makeTempDir({ prefix: "lvmh-container-" });
  const models = `${dir}/models.json`;
  await Deno.writeTextFile(models, modelsJson(llm.url));
  const image = `lvmh-test-realworker-${uniq()}:latest`;
  const env = await startSpawnEnv({ workerImage: image, env: { LVMH_MODELS_JSON: models } });
  const { d, engine } = env;
  try {
    assert.equal((await post(d, "/api/gitlab/connect", { token: env.pat })).status, 200);
    const res = await post(d, "/api/spawn", { repo: env.repos[0] });
    const body = await res.json();
    assert.equal(res.status, 201, JSON.stringify(body));
    const id = body.sessionId as string;

    const s = await waitFor(
      async () => {
        const list = await (await d.api("/api/sessions")).json() as Record<string, unknown>[];
        return list.find((x) => x.id === id && x.online);
      },
      "the real bridge online (image build included)",
      180_000,
    );
    assert.equal(s.agent, true);
    assert.equal(s.repo, env.repos[0]);
    assert.equal(s.cwd, "/workspace");
    assert.equal(s.model, "fake-model");
    assert.equal(s.provider, "fake");

    const p = await post(d, `/api/sessions/${id}/prompt`, { message: "TEXTONLY hello container" });
    assert.equal(p.status, 200);
    await p.body?.cancel();
    await waitFor(
      async () => {
        const evs = await allEvents(d, id) as Ev[];
        return evs.some((e) =>
          e.type === "message_end" &&
          (e.message as { text: string }).text === "You said: TEXTONLY hello container"
        );
      },
      "the answer from pi in the container",
      30_000,
    );

    const stop = await d.api(`/api/sessions/${id}/container`, { method: "DELETE" });
    assert.equal(stop.status, 200, await stop.clone().text());
    await stop.body?.cancel();
    const evs = await waitFor(
      async () => {
        const all = await allEvents(d, id) as Ev[];
        return all.at(-1)?.type === "bye" ? all : null;
      },
      "bye after the container is stopped",
      30_000,
    );
    const seqs = evs.map((e) => e.seq);
    assert.equal(new Set(seqs).size, seqs.length);
  } finally {
    await env.close();
    await cleanupDocker(engine, { images: [image] });
    await llm.close();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
