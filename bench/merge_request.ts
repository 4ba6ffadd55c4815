/**
 * Ship benchmark: `POST /api/sessions/:id/merge-request` against the loopback GitLab (git smart HTTP with
 * receive-pack, and the merge request API), on the real engine with the stub worker image. A session's working
 * copy is a volume filled as a spawn fills it; each round the "agent" changes 20 files (uncommitted), and the
 * call inspects, commits, bundles, pushes under the lease and creates (first round) or updates the merge
 * request. Printed: the first call (create) and the median and worst of the updates, and the helper runs.
 * Needs a Docker engine: `LVMH_TEST_DOCKER_SOCK`, or it starts one with `scripts/dockerd.sh` (and stops it).
 * Run: `deno task bench` (all benches) or `deno run -A bench/merge_request.ts [rounds]`.
 */
import { benchEngine } from "../testing/bench_engine.ts";

const ROUNDS = Number(Deno.args[0] ?? 6);

const engineHold = await benchEngine();
const { startShipEnv } = await import("../testing/ship_env.ts");
const { agentDoes } = await import("../testing/work_copy.ts");

const env = await startShipEnv("bench-mr");
const { engine, image, volume, gitHttp, gl, project, token, sessionId, daemon } = env;
const times: number[] = [];
// The in-process daemon captures console output while it runs: the figures are printed once it stopped.
const lines: string[] = [];
try {
  // A repository of some size: 500 files of 200 lines.
  const files: Record<string, string> = {};
  for (let i = 0; i < 500; i++) {
    files[`src/f${i}.txt`] = Array.from({ length: 200 }, (_, j) => `line ${j} of file ${i}\n`).join("");
  }
  await env.prepare(files);
  const app = daemon.daemon.app;
  app.sessions.register({
    id: sessionId,
    name: null,
    cwd: "/workspace",
    model: null,
    provider: null,
    agent: true,
    repo: project,
    startedAt: Date.now(),
  });
  await app.gitlab.connect(token);
  for (let round = 0; round < ROUNDS; round++) {
    await agentDoes(
      engine,
      image,
      volume,
      'for i in $(seq 0 19); do printf "round %s\\n" "$1" >> "src/f$((i + 20 * $1)).txt"; done',
      [String(round)],
    );
    const t0 = performance.now();
    const res = await daemon.api(`/api/sessions/${sessionId}/merge-request`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ title: `Round ${round}` }),
    });
    const body = await res.text();
    if (res.status !== (round === 0 ? 201 : 200)) throw new Error(`round ${round}: ${res.status} ${body}`);
    times.push(performance.now() - t0);
  }
  const updates = times.slice(1).sort((a, b) => a - b);
  const ms = (n: number) => `${(n / 1000).toFixed(2)} s`;
  lines.push(`merge request, create (inspect, commit, bundle, push, POST): ${ms(times[0])}`);
  if (updates.length) {
    lines.push(
      `merge request, update (${updates.length} rounds of 20 changed files): median ` +
        `${ms(updates[Math.floor(updates.length / 2)])}, worst ${ms(updates[updates.length - 1])}`,
    );
  }
  lines.push(
    `pushes received by the loopback GitLab: ${gitHttp.stats.pushes}; merge requests: ${gl.mergeRequests.length}`,
  );
  lines.push("each call runs four helper containers (inspect, commit, bundle, push) one after another");
} finally {
  await env.close();
  for (const line of lines) console.log(line);
  await engineHold.release();
}
