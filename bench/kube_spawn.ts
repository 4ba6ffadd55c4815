/**
 * Spawn on Kubernetes beside Docker (issue 22): time from `POST /api/spawn` to the session's `hello` (listed
 * online), through the fake API server whose Docker kubelet runs the real worker image (init container
 * cloning from the GitLab fixture, then bridge + pi), and through the Docker backend, in the same run, on the
 * same engine and image. Median and p95 of a few spawns each; each session is stopped after its hello. The
 * Kubernetes figure also says when `POST /api/spawn` answered (once the Pod is created).
 * Needs a Docker engine: `LVMH_TEST_DOCKER_SOCK`, or it starts one with `scripts/dockerd.sh` (and stops it).
 * Run: `deno task bench` (all benches) or `deno run -A bench/kube_spawn.ts [runs]`.
 */
import { benchEngine } from "../testing/bench_engine.ts";

const RUNS = Number(Deno.args[0] ?? 5);

const engineHold = await benchEngine();
const { startSpawnEnv, post } = await import("../testing/spawn_env.ts");
const { waitFor } = await import("../testing/daemon.ts");
const { BASE_IMAGE, ensureBaseImage, testEngine } = await import("../testing/docker.ts");
const { modelsJson } = await import("../testing/pi.ts");
const { startFakeLlm } = await import("../testing/fixtures/fake_llm.mjs");
const { startFakeKube } = await import("../testing/fixtures/kube_api.ts");
const { buildWorkerImage } = await import("../docker/worker.ts");

const engine = testEngine();
const baseImage = Deno.env.get("BENCH_BASE_IMAGE") ?? BASE_IMAGE;
if (baseImage === BASE_IMAGE) await ensureBaseImage();
const image = `lvmh-bench-kube-${crypto.randomUUID().slice(0, 8)}:latest`;
const llm = await startFakeLlm();
const dir = await Deno.makeTempDir({ prefix: "lvmh-bench-kube-" });
await Deno.writeTextFile(`${dir}/models.json`, modelsJson(llm.url));

type Env = Awaited<ReturnType<typeof startSpawnEnv>>;

/** Spawn → hello `RUNS` times (after one untimed warm-up); each worker is stopped after its hello. */
async function measure(env: Env): Promise<{ hello: number[]; answered: number[] }> {
  const { d } = env;
  await post(d, "/api/gitlab/connect", { token: env.pat }).then((r) => r.body?.cancel());
  const hello: number[] = [];
  const answered: number[] = [];
  for (let i = 0; i <= RUNS; i++) {
    const t0 = performance.now();
    const res = await post(d, "/api/spawn", { repo: env.repos[0] });
    const body = await res.json();
    if (res.status !== 201) throw new Error(`spawn failed: ${JSON.stringify(body)}`);
    const answer = performance.now() - t0;
    await waitFor(
      async () => {
        const list = (await (await d.api("/api/sessions")).json()) as { id: string; online: boolean }[];
        return list.some((s) => s.id === body.sessionId && s.online);
      },
      "hello",
      120_000,
    );
    const ms = performance.now() - t0;
    // The first spawn of each backend clones cold and warms the engine: not timed.
    if (i > 0) {
      hello.push(ms);
      answered.push(answer);
    }
    await d.api(`/api/sessions/${body.sessionId}/container`, { method: "DELETE" }).then((r) =>
      r.body?.cancel()
    );
  }
  return { hello, answered };
}

const pick = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.max(0, Math.min(s.length - 1, Math.ceil(q * s.length) - 1))]);
};
const line = (name: string, xs: number[]) =>
  `${name}: median ${pick(xs, 0.5)} ms, p95 ${pick(xs, 0.95)} ms, min ${pick(xs, 0)} ms (${xs.length} runs)`;

let fake: Awaited<ReturnType<typeof startFakeKube>> | null = null;
try {
  await buildWorkerImage(engine, { image, baseImage, network: "host" });
  console.log(`worker image built on ${baseImage}`);

  const docker = await startSpawnEnv({ workerImage: image, env: { LVMH_MODELS_JSON: `${dir}/models.json` } });
  let dockerTimes;
  try {
    dockerTimes = await measure(docker);
  } finally {
    await docker.close();
  }

  fake = await startFakeKube({ kubelet: "docker", dockerEngine: engine, bookmarkMs: 1000 });
  const kube = await startSpawnEnv({
    workerImage: image,
    env: {
      ...fake.daemonEnv(),
      LVMH_MODELS_JSON: `${dir}/models.json`,
    },
  });
  let kubeTimes;
  try {
    kubeTimes = await measure(kube);
  } finally {
    await kube.close();
  }

  console.log(line("docker backend, spawn → hello (cache fetch, copy, worker)", dockerTimes.hello));
  console.log(
    line("kubernetes (fake API + Docker kubelet), spawn → hello (clone in init, worker)", kubeTimes.hello),
  );
  console.log(
    line("  kubernetes: POST /api/spawn answered (Secret, claim, Pod created)", kubeTimes.answered),
  );
  console.log(
    "reference: the Kubernetes path clones the whole repository per session in its init container, the Docker " +
      "path copies from a cached clone; a real cluster adds scheduling, volume attach and image pull",
  );
} finally {
  await fake?.close();
  await engine.imageRemove(image, true).catch(() => {});
  await llm.close();
  await Deno.remove(dir, { recursive: true });
  await engineHold.release();
}
