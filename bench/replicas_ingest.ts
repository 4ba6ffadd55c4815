/**
 * Ingest of a daemon on PostgreSQL (issue 23): bench/daemon.ts's load (50 plugin sockets × 2,000 `message_end`
 * in `batch` frames of 200, timed until every event is readable over REST) against one real daemon process
 * with `LVMH_DATABASE_URL` set (a replica: each batch commits in PostgreSQL, then in its local copy, then is
 * acknowledged), beside the reference measured just before in the same run: raw batched
 * `INSERT … SELECT FROM unnest(…)` of the same rows (the events table's shape: session_id, seq, ts, type,
 * payload) into the same PostgreSQL, 50 writers at once each sending its batches of 200 one after the other,
 * on a pool of 10 connections as the daemon's. The server keeps its durable defaults (fsync, synchronous
 * commit), as production would; each round gets fresh databases and a fresh daemon.
 * Run: `deno task bench` (all benches) or `deno run -A bench/replicas_ingest.ts` (ROUNDS=n, default 3).
 * Skipped with one line when PostgreSQL is not installed.
 */
import { startDaemon } from "../testing/daemon.ts";
import { eventFrame } from "../testing/agent.ts";
import { postgresBinDir, startPostgres } from "../testing/postgres.ts";
import { connectPostgres } from "../lib/storage/pg_client.ts";
import { cpuMs, treeCpuMs } from "../testing/proc.ts";
import { ingestLoad } from "./daemon.ts";

const SOCKETS = 50;
const EVENTS_PER_SOCKET = 2000;
/** Rows per raw INSERT: the daemon's `batch` frames in bench/daemon.ts's load carry 200 events. */
const BATCH = 200;
/** Connections of the raw writers' pool: the daemon's pool (lib/storage/pg_client.ts's default). */
const POOL = 10;
const GOAL = 0.7;
const ROUNDS = Number(Deno.env.get("ROUNDS") ?? 3);
const TEXT = "lorem ipsum dolor sit amet ".repeat(12).slice(0, 300);

/** CPU per event (µs) of each process that works on the load, beside the rate. */
interface Costs {
  rate: number;
  /** The daemon (none for the raw writers). */
  daemonUs: number;
  /** The PostgreSQL server, all its processes. */
  serverUs: number;
  /** This process: the raw writers, or the 50 plugin sockets. */
  clientUs: number;
}

/** CPU counters of the server and this process, read at the start of a timed load. */
function cpuClock(serverPid: number): { us(): { serverUs: number; clientUs: number } } {
  const server0 = treeCpuMs(serverPid);
  const self0 = cpuMs(Deno.pid);
  const perEvent = (ms: number) => (ms * 1000) / (SOCKETS * EVENTS_PER_SOCKET);
  return {
    us: () => ({
      serverUs: perEvent(treeCpuMs(serverPid) - server0),
      clientUs: perEvent(cpuMs(Deno.pid) - self0),
    }),
  };
}

/** The reference: the same rows by raw `INSERT … unnest`, one writer per session, into database `url`. */
async function rawRate(url: string, serverPid: number): Promise<Costs> {
  const sql = connectPostgres(url, { max: POOL });
  try {
    await sql`CREATE TABLE raw_events(session_id text NOT NULL, seq bigint NOT NULL, ts bigint NOT NULL,
      type text NOT NULL, payload text NOT NULL, PRIMARY KEY(session_id, seq))`;
    const ids = Array.from({ length: SOCKETS }, (_, i) => `bench-${i}`);
    // Rows are encoded before the clock starts, as bench/daemon.ts encodes the plugins' frames.
    const batches = ids.map((id) => {
      const out: { sessions: string[]; seqs: number[]; ts: number[]; types: string[]; payloads: string[] }[] =
        [];
      for (let from = 1; from <= EVENTS_PER_SOCKET; from += BATCH) {
        const seqs = Array.from({ length: BATCH }, (_, i) => from + i);
        out.push({
          sessions: seqs.map(() => id),
          seqs,
          ts: seqs.map(() => Date.now()),
          types: seqs.map(() => "message_end"),
          payloads: seqs.map((seq) => JSON.stringify(eventFrame(id, seq, "message_end", message(seq)))),
        });
      }
      return out;
    });
    const t0 = performance.now();
    const clock = cpuClock(serverPid);
    await Promise.all(batches.map(async (session) => {
      for (const b of session) {
        await sql`INSERT INTO raw_events(session_id, seq, ts, type, payload)
          SELECT * FROM unnest(${b.sessions}::text[], ${b.seqs}::bigint[], ${b.ts}::bigint[],
            ${b.types}::text[], ${b.payloads}::text[])`;
      }
    }));
    const rate = (SOCKETS * EVENTS_PER_SOCKET) / ((performance.now() - t0) / 1000);
    const costs = { rate, daemonUs: 0, ...clock.us() };
    const [{ count }] = await sql`SELECT count(*)::int AS count FROM raw_events`;
    if (count !== SOCKETS * EVENTS_PER_SOCKET) throw new Error(`raw_events holds ${count} rows`);
    return costs;
  } finally {
    await sql.end();
  }
}

const message = (i: number) => ({
  message: { role: "assistant", id: `m${i}`, text: TEXT, thinking: null, toolCalls: [], toolCallId: null },
});

/**
 * bench/daemon.ts's ingest load against a daemon process on database `url`; checks PostgreSQL holds it all.
 * @returns events per second and the CPU per event of the daemon (all its threads), the server and this process.
 */
async function daemonRate(url: string, serverPid: number): Promise<Costs> {
  await using d = await startDaemon({ env: { LVMH_DATABASE_URL: url, LVMH_REPLICA_ID: "r0" } });
  const health = await (await fetch(`${d.url}/api/health`)).json();
  if (health.database !== "postgres") throw new Error(`the daemon runs on ${health.database}`);
  let cpu0 = 0;
  let clock = cpuClock(serverPid);
  const rate = await ingestLoad(d, () => {
    cpu0 = cpuMs(d.pid);
    clock = cpuClock(serverPid);
  });
  const costs = {
    rate,
    daemonUs: ((cpuMs(d.pid) - cpu0) * 1000) / (SOCKETS * EVENTS_PER_SOCKET),
    ...clock.us(),
  };
  const sql = connectPostgres(url, { max: 1 });
  try {
    const [{ count }] = await sql`SELECT count(*)::int AS count FROM events`;
    if (count !== SOCKETS * EVENTS_PER_SOCKET) {
      throw new Error(`PostgreSQL's events table holds ${count} rows`);
    }
  } finally {
    await sql.end();
  }
  return costs;
}

async function main() {
  if (!await postgresBinDir()) {
    console.log(
      "replicas ingest: skipped: no PostgreSQL binaries (initdb) found; scripts/setup.sh --test installs them",
    );
    return;
  }
  await using pg = await startPostgres({ durable: true });
  const admin = connectPostgres(pg.url, { max: 1 });
  const [{ server_version: version }] = await admin`SHOW server_version`;
  await admin.end();
  const rounds: { raw: Costs; daemon: Costs; share: number }[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const raw = await rawRate(await pg.newDatabase(), pg.serverPid());
    const daemon = await daemonRate(await pg.newDatabase(), pg.serverPid());
    rounds.push({ raw, daemon, share: daemon.rate / raw.rate });
  }
  console.log(
    `replicas ingest: ${SOCKETS} plugin sockets × ${
      EVENTS_PER_SOCKET.toLocaleString("en")
    } message_end in batch frames of ${BATCH} into one daemon process on PostgreSQL ${
      String(version).split(" ")[0]
    } (durable), until readable via REST; reference: raw INSERT … unnest of the same rows, ${BATCH} per ` +
      `statement, ${SOCKETS} writers on a pool of ${POOL}, into the same PostgreSQL, measured just before`,
  );
  const us = (n: number) => n.toFixed(1);
  for (const { raw, daemon, share } of rounds) {
    console.log(
      `  ${Math.round(daemon.rate).toLocaleString("en")} events/s against ${
        Math.round(raw.rate).toLocaleString("en")
      } rows/s raw: ${share.toFixed(2)}; CPU µs per event: daemon ${us(daemon.daemonUs)}, server ${
        us(daemon.serverUs)
      }, sockets ${us(daemon.clientUs)} (raw: server ${us(raw.serverUs)}, writers ${us(raw.clientUs)})`,
    );
  }
  const median = [...rounds].sort((a, b) => a.share - b.share)[Math.floor(rounds.length / 2)];
  // Both loads share the machine's cores with the server: the ratio of their whole CPU per event is the share
  // the daemon's path could reach with every core busy, whatever it overlaps.
  const cpuShares = rounds.map(({ raw, daemon }) =>
    (raw.serverUs + raw.clientUs) / (daemon.daemonUs + daemon.serverUs + daemon.clientUs)
  ).sort((a, b) => a - b);
  console.log(
    `  CPU per event, all processes: raw's is ${
      cpuShares[Math.floor(cpuShares.length / 2)].toFixed(2)
    } of the daemon path's (median; rounds ${cpuShares[0].toFixed(2)}–${cpuShares.at(-1)!.toFixed(2)})`,
  );
  console.log(
    `  replicas ingest = ${
      median.share.toFixed(2)
    } of raw, median of ${rounds.length} rounds (goal ≥ ${GOAL}): ${
      median.share >= GOAL ? "met" : "NOT met"
    }`,
  );
}

await main();
