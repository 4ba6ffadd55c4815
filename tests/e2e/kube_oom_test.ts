/**
 * An OOM kill on Kubernetes, end to end: the real daemon against the fake API server whose Docker kubelet
 * runs the real worker image with the Pod's memory limit (`LVMH_WORKER_MEMORY`). The fake LLM makes pi run a
 * bash command that takes memory past that limit; the kernel kills the worker, the kubelet reports
 * `OOMKilled`, and the session becomes `crashed` with reason `oom`; its logs stay readable after its Pod was
 * removed, and a resume brings it back online on its kept claim.
 */
import assert from "node:assert/strict";
import { waitFor } from "../../testing/daemon.ts";
import { BASE_IMAGE, cleanupDocker, dockerTest, testEngine, uniq } from "../../testing/docker.ts";
import { post, startSpawnEnv } from "../../testing/spawn_env.ts";
import { modelsJson } from "../../testing/pi.ts";
import { startFakeLlm } from "../../testing/fixtures/fake_llm.mjs";
import { startFakeKube } from "../../testing/fixtures/kube_api.ts";
import { buildWorkerImage } from "../../docker/worker.ts";

type Session = {
  id: string;
  online: boolean;
  container: string | null;
  exitCode?: number;
  reason?: string;
};

dockerTest(
  "kubernetes: a worker killed for memory is crashed (oom), its logs kept, and resumable",
  async () => {
    const engine = testEngine();
    const image = `lvmh-test-kube-oom-${uniq()}:latest`;
    await buildWorkerImage(engine, { image, baseImage: BASE_IMAGE, network: "host" });
    const fake = await startFakeKube({ kubelet: "docker", dockerEngine: engine, bookmarkMs: 1000 });
    const llm = await startFakeLlm();
    const dir = await Deno.makeTempDir({ prefix: "lvmh-kube-oom-" });
    await Deno.writeTextFile(`${dir}/models.json`, modelsJson(llm.url));
    const env = await startSpawnEnv({
      workerImage: image,
      env: {
        LVMH_SPAWN_BACKEND: "kubernetes",
        LVMH_KUBE_URL: fake.url,
        LVMH_KUBE_TOKEN_FILE: fake.tokenFile,
        LVMH_KUBE_CA_FILE: fake.caFile,
        LVMH_KUBE_NAMESPACE: fake.namespace,
        LVMH_MODELS_JSON: `${dir}/models.json`,
        LVMH_WORKER_MEMORY: "384m",
      },
    });
    const { d } = env;
    try {
      await post(d, "/api/gitlab/connect", { token: env.pat }).then((r) => r.body?.cancel());
      const spawned = await post(d, "/api/spawn", { repo: env.repos[0], ask: [] });
      const id = (await spawned.json()).sessionId as string;
      assert.equal(spawned.status, 201);
      const session = async () =>
        ((await (await d.api("/api/sessions")).json()) as Session[]).find((s) => s.id === id);
      await waitFor(async () => (await session())?.online, "the hello", 120_000).catch((error) => {
        throw new Error(`${error.message}\ndaemon:\n${d.output()}`);
      });
      const pod = fake.get("pods", `lvmh-w-${id}`)!;
      const limits = (pod.spec as { containers: { resources?: { limits?: { memory?: string } } }[] })
        .containers[0].resources?.limits;
      assert.equal(limits?.memory, "384Mi", "LVMH_WORKER_MEMORY is the worker's limit");

      const res = await post(d, `/api/sessions/${id}/prompt`, { message: "OOMTOOL" });
      assert.equal(res.status, 200, await res.text());
      const crashed = await waitFor(
        async () => {
          const s = await session();
          return s?.container === "crashed" ? s : null;
        },
        "crashed",
        120_000,
      ).catch(async (error) => {
        const events = await (await d.api(`/api/sessions/${id}/events`)).text();
        const status = JSON.stringify(fake.get("pods", `lvmh-w-${id}`)?.status);
        throw new Error(
          `${error.message}\nevents: ${events.slice(-3000)}\npod: ${status}\ndaemon:\n${d.output()}`,
        );
      });
      assert.deepEqual([crashed.reason, crashed.exitCode, crashed.online], ["oom", 137, false]);
      await waitFor(() => !fake.get("pods", `lvmh-w-${id}`), "the ended Pod removed", 30_000);
      assert.ok(fake.get("persistentvolumeclaims", `lvmh-ws-${id}`), "the claim is kept");
      const logs = await d.api(`/api/sessions/${id}/container/logs?tail=50`);
      assert.equal(logs.status, 200);
      assert.match(await logs.text(), /lvmh-bridge/);

      const resumed = await post(d, `/api/sessions/${id}/resume`, {});
      assert.equal(resumed.status, 202, await resumed.text());
      await waitFor(async () => (await session())?.online, "the hello after the crash", 120_000);
      assert.equal((await session())?.container, "running");
    } finally {
      await env.close();
      await fake.close();
      await llm.close();
      await cleanupDocker(engine, { images: [image] });
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
);
