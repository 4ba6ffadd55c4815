/**
 * Resume benchmark: stop → resume → the session's `hello`, on the real engine with the worker the daemon
 * builds (bridge and pi 0.73.1) and the fake LLM, the image cached. One session is spawned and answers a
 * prompt; then each round stops it (its storage kept) and resumes it, timing `POST /resume` until the
 * session is listed online again (pi reopened its file, the plugin said hello). Printed: median and p95 of
 * the whole, and of the 202 alone (a new container started).
 * Needs a Docker engine: `LVMH_TEST_DOCKER_SOCK`, or it starts one with `scripts/dockerd.sh` (and stops it).
 * Run: `deno task bench` (all benches) or `deno run -A bench/resume.ts [rounds]`.
 */
import { benchEngine } from "../testing/bench_engine.ts";

const ROUNDS = Number(Deno.args[0] ?? 9);

const engineHold = await benchEngine();
const { uniq } = await import("../testing/docker.ts");
const { post, startSpawnEnv } = await import("../testing/spawn_env.ts");
const { modelsJson } = await import("../testing/pi.ts");
const { startFakeLlm } = await import("../testing/fixtures/fake_llm.mjs");
const { waitFor } = await import("../testing/daemon.ts");

const llm = await startFakeLlm();
const dir = await Deno.makeTempDir({ prefix: "lvmh-bench-resume-" });
await Deno.writeTextFile(`${dir}/models.json`, modelsJson(llm.url));
const image = `lvmh-bench-resume-${uniq()}:latest`;
const env = await startSpawnEnv({ workerImage: image, env: { LVMH_MODELS_JSON: `${dir}/models.json` } });
const { d } = env;
const lines: string[] = [];
try {
  const online = async (id: string, want: boolean) => {
    const list = await (await d.api("/api/sessions")).json() as { id: string; online: boolean }[];
    return list.find((s) => s.id === id)?.online === want;
  };
  await post(d, "/api/gitlab/connect", { token: env.pat }).then((r) => r.body?.cancel());
  const spawned = await (await post(d, "/api/spawn", { repo: env.repos[0], ask: [] })).json();
  const id = spawned.sessionId as string;
  await waitFor(() => online(id, true), "the first hello", 120_000);
  await post(d, `/api/sessions/${id}/prompt`, { message: "TEXTONLY hello" }).then((r) => r.body?.cancel());
  await waitFor(
    async () => {
      const events = await (await d.api(`/api/sessions/${id}/events`)).json() as { type: string }[];
      return events.some((e) => e.type === "agent_settled");
    },
    "the answer",
    60_000,
  );
  const whole: number[] = [];
  const accepted: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const stop = await d.api(`/api/sessions/${id}/container`, { method: "DELETE" });
    if (stop.status !== 200) throw new Error(`stop: ${stop.status} ${await stop.text()}`);
    await waitFor(() => online(id, false), "offline", 30_000);
    const t0 = performance.now();
    const res = await post(d, `/api/sessions/${id}/resume`, {});
    if (res.status !== 202) throw new Error(`resume: ${res.status} ${await res.text()}`);
    await res.body?.cancel();
    accepted.push(performance.now() - t0);
    // Polled every 10 ms: the figure may be up to that much late.
    const deadline = Date.now() + 60_000;
    while (!await online(id, true)) {
      if (Date.now() > deadline) throw new Error("no hello after resume");
      await new Promise((r) => setTimeout(r, 10));
    }
    whole.push(performance.now() - t0);
  }
  const stat = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    const pick = (q: number) => s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)];
    return `median ${(pick(0.5) / 1000).toFixed(2)} s, p95 ${(pick(0.95) / 1000).toFixed(2)} s`;
  };
  lines.push(
    `resume: stop → POST /resume → hello (${ROUNDS} rounds, pi 0.73.1, image cached): ${stat(whole)}`,
  );
  lines.push(`resume: the 202 alone (a new container started on the kept storage): ${stat(accepted)}`);
} finally {
  await env.close();
  await env.engine.imageRemove(image, true).catch(() => {});
  await llm.close();
  await Deno.remove(dir, { recursive: true });
  for (const line of lines) console.log(line);
  await engineHold.release();
}
