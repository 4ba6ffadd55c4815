/**
 * Command latency across replicas (issue 23): `POST /api/sessions/:id/prompt` on replica B until the `prompt`
 * frame arrives on the plugin's socket on replica A (the session's holder: B queues it in PostgreSQL, A is
 * woken by NOTIFY, takes it and writes it), one prompt at a time, 300 of them after 20 unmeasured, p50 and p99;
 * beside the reference measured in the same run: the same on one daemon on SQLite, REST and plugin on it. Two
 * daemon processes on one durable PostgreSQL; the plugin socket is npm `ws` (TCP_NODELAY, as the plugin's) in
 * this process, which sends the requests too, so both ends read one clock. The time to the REST answer is
 * printed beside.
 * Run: `deno task bench` (all benches) or `deno run -A bench/replicas_commands.ts`. Skipped with one line when
 * PostgreSQL is not installed.
 */
import { type Daemon, startDaemon, waitFor } from "../testing/daemon.ts";
import { startReplicas } from "../testing/replicas.ts";
import { nodelayAgent } from "../testing/agent.ts";
import { postgresBinDir, startPostgres } from "../testing/postgres.ts";
import { pct } from "../testing/proc.ts";

const PROMPTS = 300;
const WARMUP = 20;
/** What the issue promises for a command made on another replica. */
const GOAL_MS = 1_000;
/** A prompt not delivered by then fails the run rather than hanging it. */
const STUCK_MS = 10_000;
const SESSION = "bench-commands";

interface Figures {
  frame: number[];
  answer: number[];
}

/** Prompts by REST on `rest`, the plugin's socket on `holder`; delays sorted, ms. */
async function measure(rest: Daemon, holder: Daemon): Promise<Figures> {
  const agent = await nodelayAgent(holder.agentUrl, holder.token, SESSION, "commands");
  const waiting = new Map<string, () => void>();
  agent.socket.on("message", (data: unknown) => {
    const f = JSON.parse(String(data));
    if (f.type === "prompt") waiting.get(f.message)?.();
  });
  try {
    await waitFor(
      async () => (await (await rest.api(`/api/sessions/${SESSION}`)).json()).online === true,
      "the session online where the prompts are sent",
    );
    const frame: number[] = [], answer: number[] = [];
    for (let i = 0; i < WARMUP + PROMPTS; i++) {
      const text = `prompt ${i}`;
      let timer: ReturnType<typeof setTimeout> | undefined;
      let arrived = 0;
      const delivered = new Promise<void>((resolve, reject) => {
        waiting.set(text, () => {
          arrived = performance.now();
          resolve();
        });
        timer = setTimeout(() => reject(new Error(`prompt ${i} not delivered in ${STUCK_MS} ms`)), STUCK_MS);
      });
      const t0 = performance.now();
      const res = await rest.api(`/api/sessions/${SESSION}/prompt`, {
        method: "POST",
        body: JSON.stringify({ message: text, deliverAs: "followUp" }),
      });
      const answered = performance.now();
      if (!res.ok) {
        throw new Error(`prompt ${i}: ${res.status} ${await res.text()}\n${rest.output().slice(-3000)}`);
      }
      await res.body?.cancel();
      await delivered;
      clearTimeout(timer);
      waiting.delete(text);
      if (i >= WARMUP) {
        frame.push(arrived - t0);
        answer.push(answered - t0);
      }
    }
    return { frame: frame.sort((a, b) => a - b), answer: answer.sort((a, b) => a - b) };
  } finally {
    await agent.close();
  }
}

const show = (name: string, f: Figures) =>
  `  ${name}: p50 ${pct(f.frame, 0.5).toFixed(2)} ms, p99 ${pct(f.frame, 0.99).toFixed(2)} ms, max ${
    f.frame.at(-1)!.toFixed(1)
  } ms (goal p99 < ${GOAL_MS} ms: ${pct(f.frame, 0.99) < GOAL_MS ? "met" : "NOT met"}); the REST answer p50 ${
    pct(f.answer, 0.5).toFixed(2)
  } ms, p99 ${pct(f.answer, 0.99).toFixed(2)} ms`;

async function replicasFigures(): Promise<Figures | null> {
  if (!await postgresBinDir()) return null;
  await using pg = await startPostgres({ durable: true });
  await using set = await startReplicas(2, { databaseUrl: await pg.newDatabase() });
  const [a, b] = set.replicas.map((r) => r.daemon());
  return await measure(b, a);
}

async function singleFigures(): Promise<Figures> {
  await using d = await startDaemon();
  return await measure(d, d);
}

console.log(
  `replicas commands: ${PROMPTS} prompts one at a time, POST /api/sessions/:id/prompt until the prompt frame ` +
    `reaches the plugin's socket; after ${WARMUP} unmeasured`,
);
const replicas = await replicasFigures();
console.log(
  replicas
    ? show("REST on B → plugin on A (2 daemons, PostgreSQL, durable)", replicas)
    : "  replicas: skipped: no PostgreSQL binaries (initdb) found; scripts/setup.sh --test installs them",
);
const single = await singleFigures();
console.log(show("one daemon on SQLite, REST and plugin on it (the reference)", single));
if (replicas) {
  console.log(
    `  B → A / one daemon: p50 ${(pct(replicas.frame, 0.5) / pct(single.frame, 0.5)).toFixed(1)}×, p99 ${
      (pct(replicas.frame, 0.99) / pct(single.frame, 0.99)).toFixed(1)
    }×`,
  );
}
