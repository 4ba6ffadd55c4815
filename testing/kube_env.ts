/**
 * Test helper for Kubernetes spawn tests: the real daemon with `LVMH_SPAWN_BACKEND=kubernetes` against the fake
 * API server whose Docker kubelet runs each Pod on the test engine (the real worker image, built here), the
 * fake LLM for pi, and the GitLab fixture with its git server (testing/spawn_env.ts), connected. `close()`
 * stops everything and removes the containers and the temp dir. The worker image is shared by the tests
 * (testing/docker.ts `sharedWorkerImage`).
 */
import type { Daemon } from "./daemon.ts";
import { cleanupDocker, sharedWorkerImage, testEngine, uniq } from "./docker.ts";
import { post, type SpawnEnv, startSpawnEnv } from "./spawn_env.ts";
import { modelsJson } from "./pi.ts";
import { startFakeLlm } from "./fixtures/fake_llm.mjs";
import { type FakeKube, startFakeKube } from "./fixtures/kube_api.ts";
import type { Engine } from "../docker/engine.ts";
import type { SessionSummary, SpawnJob } from "../lib/protocol.ts";

export interface KubeSpawnEnv {
  engine: Engine;
  image: string;
  fake: FakeKube;
  env: SpawnEnv;
  /** The daemon's Kubernetes environment (to start it again on the same fake). */
  kubeEnv: Record<string, string>;
  sessions(): Promise<SessionSummary[]>;
  jobs(): Promise<SpawnJob[]>;
  close(): Promise<void>;
}

/**
 * @param extraEnv more daemon environment (`LVMH_WORKER_MEMORY`, …)
 * @param o.build false: the image is not built (a test of a missing one)
 * @param o.daemon how to run the daemon (default: `main.ts` as a subprocess)
 */
export async function startKubeSpawnEnv(
  extraEnv: Record<string, string> = {},
  o: { build?: boolean; daemon?: (env: Record<string, string>) => Promise<Daemon> } = {},
): Promise<KubeSpawnEnv> {
  const engine = testEngine();
  // Not built: a name nothing has, as with a typo in LVMH_WORKER_IMAGE.
  const image = o.build === false
    ? `lvmh-test-kube-worker-${uniq()}:latest`
    : await sharedWorkerImage(engine);
  const fake = await startFakeKube({ kubelet: "docker", dockerEngine: engine, bookmarkMs: 1000 });
  const llm = await startFakeLlm();
  const dir = await Deno.makeTempDir({ prefix: "lvmh-kube-e2e-" });
  await Deno.writeTextFile(`${dir}/models.json`, modelsJson(llm.url));
  const kubeEnv = { ...fake.daemonEnv(), LVMH_MODELS_JSON: `${dir}/models.json`, ...extraEnv };
  const env = await startSpawnEnv({ workerImage: image, env: kubeEnv, daemon: o.daemon });
  await post(env.d, "/api/gitlab/connect", { token: env.pat }).then((r) => r.body?.cancel());
  return {
    engine,
    image,
    fake,
    env,
    kubeEnv,
    sessions: async () => await (await env.d.api("/api/sessions")).json(),
    jobs: async () => await (await env.d.api("/api/spawn/status")).json(),
    async close() {
      await env.close();
      await fake.close();
      await llm.close();
      await cleanupDocker(engine, { images: o.build === false ? [image] : [] });
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}
