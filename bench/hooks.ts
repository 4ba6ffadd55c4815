/**
 * Inbound hooks (issue 11): time from sending a hook to its 202, from a client on loopback against the daemon as
 * a process with a plugin connected, for the generic hook (an operator token, a prompt each) and a GitLab `/lvmh`
 * note; beside an authenticated `GET /api/me` in the same run, the daemon's floor for any request.
 * Run: `deno task bench` (all benches) or `deno run -A bench/hooks.ts`.
 */
import { startDaemon } from "../testing/daemon.ts";
import { connectAgent, sessionInfo } from "../testing/agent.ts";
import { noteOnMergeRequest } from "../testing/fixtures/gitlab_hooks/payloads.ts";
import { pct } from "../testing/proc.ts";

const ROUNDS = 500;
const SECRET = "bench-gitlab-hook-secret-0123456789";

await using d = await startDaemon();
const agent = await connectAgent(d, {
  sessionId: "bench-hooks",
  session: sessionInfo("bench-hooks", { repo: "git@gitlab.example:group/proj.git" }),
});
const operator = (await (await d.api("/api/tokens", {
  method: "POST",
  body: JSON.stringify({ name: "bench-ci", role: "operator" }),
})).json()).token as string;
await (await d.api("/api/hooks/gitlab", { method: "PUT", body: JSON.stringify({ secret: SECRET }) })).body
  ?.cancel();

/** Time `send` ROUNDS times, one after another; every answer must have `status`. */
async function timed(status: number, send: (i: number) => Promise<Response>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const t0 = performance.now();
    const res = await send(i);
    await res.body?.cancel();
    out.push(performance.now() - t0);
    if (res.status !== status) throw new Error(`answered ${res.status}, not ${status}`);
  }
  return out.sort((a, b) => a - b);
}

const json = { "content-type": "application/json" };
const me = await timed(
  200,
  () => fetch(`${d.url}/api/me`, { headers: { authorization: `Bearer ${d.token}` } }),
);
const generic = await timed(202, (i) =>
  fetch(`${d.url}/hooks/generic?token=${operator}`, {
    method: "POST",
    headers: { ...json, "idempotency-key": `bench-${i}` },
    body: JSON.stringify({ sessionId: "bench-hooks", message: `deploy ${i} done`, followUp: true }),
  }));
const gitlab = await timed(202, (i) =>
  fetch(`${d.url}/hooks/gitlab`, {
    method: "POST",
    headers: {
      ...json,
      "x-gitlab-event": "Note Hook",
      "x-gitlab-token": SECRET,
      "x-gitlab-event-uuid": `u-${i}`,
    },
    body: JSON.stringify(noteOnMergeRequest(`/lvmh bench note ${i}`)),
  }));
const prompts = () => agent.frames.filter((f) => f.type === "prompt").length;
const deadline = Date.now() + 30_000;
while (prompts() < 2 * ROUNDS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
await agent.close();

const line = (what: string, xs: number[]) =>
  `  ${what}: p50 ${pct(xs, 0.5).toFixed(2)} ms, p95 ${pct(xs, 0.95).toFixed(2)} ms, p99 ${
    pct(xs, 0.99).toFixed(2)
  } ms`;
console.log(`inbound hooks: time to the answer, ${ROUNDS} requests each, one at a time, plugin connected`);
console.log(line("POST /hooks/generic → 202 (operator token, a prompt each)", generic));
console.log(line("POST /hooks/gitlab, a /lvmh note → 202", gitlab));
console.log(line("reference: GET /api/me → 200 (bearer)", me));
console.log(`  prompts delivered to the plugin: ${prompts()} of ${2 * ROUNDS}`);
if (prompts() !== 2 * ROUNDS) Deno.exit(1);
