/**
 * Fan-out across replicas (issue 23): bench/fanout.ts's load — one plugin process streaming 1,000
 * `message_update` 1 ms apart, 20 browsers in 4 processes of 5 following its session, stamps on the shared
 * wall clock (testing/proc.ts `wallClock`) — with the plugin on replica A and the 20 browsers on replica B, two
 * daemon processes on one durable PostgreSQL (the deltas go A → B over the live channel, NOTIFY), beside the
 * reference measured in the same run: the same load on one daemon on SQLite (no PostgreSQL), plugin and
 * browsers on it. Rounds of the two alternate, each on fresh daemons (and a fresh database), since the two
 * cores' other work moves both. Run: `deno task bench` (all benches) or `deno run -A bench/replicas_fanout.ts`
 * (ROUNDS=n, default 3). Skipped with one line when PostgreSQL is not installed.
 */
import { startDaemon } from "../testing/daemon.ts";
import { startReplicas } from "../testing/replicas.ts";
import { postgresBinDir, startPostgres } from "../testing/postgres.ts";
import { pct } from "../testing/proc.ts";
import { independentLoad, type Load, PROCESSES, WATCHERS } from "./fanout.ts";

const ROUNDS = Number(Deno.env.get("ROUNDS") ?? 3);

/** Plugin on A, the 20 browsers on B, both replicas on database `url`. */
async function replicasLoad(url: string): Promise<Load> {
  await using set = await startReplicas(2, { databaseUrl: url });
  const [a, b] = set.replicas.map((r) => r.daemon());
  return await independentLoad(
    { agentUrl: a.agentUrl, token: set.token, browserUrl: b.browserUrl, pid: a.pid },
    PROCESSES,
    WATCHERS / PROCESSES,
  );
}

/** The reference: plugin and browsers on one daemon on SQLite. */
async function singleLoad(): Promise<Load> {
  await using d = await startDaemon();
  return await independentLoad({ ...d, pid: d.pid }, PROCESSES, WATCHERS / PROCESSES);
}

const show = (l: Load) =>
  `p50 ${pct(l.delays, 0.5).toFixed(2)} ms, p99 ${pct(l.delays, 0.99).toFixed(2)} ms, max ${
    l.delays.at(-1)!.toFixed(1)
  } ms over ${l.delays.length}${l.missing ? ` (${l.missing} MISSING)` : ""}; machine ${
    l.machineCpu.toFixed(0)
  } % of 200; clocks aligned by ≤ ${(l.offsetMs * 1000).toFixed(0)} µs${
    l.stalls.length
      ? `; watcher stalls > 5 ms: ${l.stalls.length}, worst ${Math.max(...l.stalls).toFixed(0)} ms`
      : ""
  }`;

async function main() {
  if (!await postgresBinDir()) {
    console.log(
      "replicas fan-out: skipped: no PostgreSQL binaries (initdb) found; scripts/setup.sh --test installs them",
    );
    return;
  }
  await using pg = await startPostgres({ durable: true });
  const rounds: { replicas: Load; single: Load }[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const replicas = await replicasLoad(await pg.newDatabase());
    const single = await singleLoad();
    rounds.push({ replicas, single });
  }
  console.log(
    `replicas fan-out: one plugin process streaming 1000 message_update 1 ms apart, ${WATCHERS} browsers in ` +
      `${PROCESSES} processes of ${WATCHERS / PROCESSES}, delay from the plugin's stamp to each browser; ` +
      `${ROUNDS} rounds, fresh daemons for each load`,
  );
  rounds.forEach((r, i) => {
    console.log(`  round ${i + 1}`);
    console.log(`    plugin on A, browsers on B (PostgreSQL, durable): ${show(r.replicas)}`);
    console.log(`    one daemon on SQLite (the reference):             ${show(r.single)}`);
  });
  const median = (pick: (r: (typeof rounds)[number]) => Load, p: number) =>
    rounds.map((r) => pct(pick(r).delays, p)).sort((a, b) => a - b)[Math.floor(rounds.length / 2)];
  const [rp50, rp99] = [median((r) => r.replicas, 0.5), median((r) => r.replicas, 0.99)];
  const [sp50, sp99] = [median((r) => r.single, 0.5), median((r) => r.single, 0.99)];
  console.log(
    `  median p50/p99: A → B ${rp50.toFixed(2)}/${rp99.toFixed(2)} ms, one daemon ${sp50.toFixed(2)}/${
      sp99.toFixed(2)
    } ms: p99 ${(rp99 / sp99).toFixed(2)}× the single daemon's`,
  );
  const missing = rounds.reduce((n, r) => n + r.replicas.missing + r.single.missing, 0);
  if (missing) console.log(`  ${missing} deliveries MISSING (live deltas are lossy by design)`);
}

await main();
