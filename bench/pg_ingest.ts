/**
 * Postgres ingest benchmark (issue 23): 50 sockets' worth of sessions × 2,000 events appended through
 * lib/storage/pg_event_log.ts (holder epoch checked, seq counter row locked and moved, replays detected, each
 * event encoded as browsers get it) against raw batched `INSERT … SELECT FROM unnest(…)` of the same rows into
 * the same PostgreSQL, with the same batches, concurrency and pool, in the same run. The server keeps its
 * durable defaults (fsync, synchronous commit), as production would.
 * Run: `deno task bench` (all benches) or `deno run -A bench/pg_ingest.ts`. Skipped when PostgreSQL is missing.
 */
import type { AgentEvent } from "../lib/protocol.ts";
import { PgEventLog } from "../lib/storage/pg_event_log.ts";
import { connectPostgres, type Sql } from "../lib/storage/pg_client.ts";
import { postgresBinDir, startPostgres } from "../testing/postgres.ts";
import { sessionInfo } from "../testing/agent.ts";
import type { SessionInfo } from "../lib/protocol.ts";

const SESSIONS = 50;
const EVENTS_PER_SESSION = 2000;
/** Events per append: a plugin's `batch` frame under a backlog, as bench/daemon.ts sends. */
const BATCH = 200;
/** Connections in each pool (the driver's default). */
const POOL = 10;
const ROUNDS = 3;
const GOAL = 0.7;
const TEXT = "lorem ipsum dolor sit amet ".repeat(12).slice(0, 300);

const event = (sessionId: string, seq: number): AgentEvent =>
  ({
    v: 1,
    sessionId,
    seq,
    ts: Date.now(),
    type: "message_end",
    message: {
      role: "assistant",
      id: `m${seq}`,
      text: TEXT,
      thinking: null,
      toolCalls: [],
      toolCallId: null,
    },
  }) as unknown as AgentEvent;

const ids = Array.from({ length: SESSIONS }, (_, i) => `bench-session-${i}`);

/** Run one writer per session at once, each sending its batches one after the other; rows per second. */
async function timed(write: (sessionId: string, from: number) => Promise<void>): Promise<number> {
  const t0 = performance.now();
  await Promise.all(ids.map(async (id) => {
    for (let from = 1; from <= EVENTS_PER_SESSION; from += BATCH) await write(id, from);
  }));
  return (SESSIONS * EVENTS_PER_SESSION) / ((performance.now() - t0) / 1000);
}

/** The reference: the same rows, one `INSERT … unnest` statement per batch, no counter, no fence. */
async function rawRate(sql: Sql): Promise<number> {
  await sql`TRUNCATE raw_events`;
  const payload = JSON.stringify({ message: (event("x", 1) as unknown as { message: unknown }).message });
  return await timed(async (id, from) => {
    const n = Math.min(BATCH, EVENTS_PER_SESSION - from + 1);
    const sessions = new Array<string>(n).fill(id);
    const seqs = Array.from({ length: n }, (_, i) => from + i);
    const ts = new Array<number>(n).fill(Date.now());
    const types = new Array<string>(n).fill("message_end");
    const payloads = new Array<string>(n).fill(payload);
    await sql`INSERT INTO raw_events(session_id, seq, ts, type, payload)
      SELECT * FROM unnest(${sessions}::text[], ${seqs}::bigint[], ${ts}::bigint[], ${types}::text[],
        ${payloads}::text[])
      ON CONFLICT DO NOTHING`;
  });
}

/** Through the event log: each session claimed, then appended to with its epoch. */
async function logRate(log: PgEventLog, sql: Sql): Promise<number> {
  await sql`TRUNCATE events`;
  await sql`DELETE FROM sessions`;
  const epochs = new Map<string, number>();
  for (const id of ids) {
    await log.ensureSession(sessionInfo(id) as SessionInfo);
    epochs.set(id, await log.claimHolder(id, "bench"));
  }
  const rate = await timed(async (id, from) => {
    const n = Math.min(BATCH, EVENTS_PER_SESSION - from + 1);
    const batch = Array.from({ length: n }, (_, i) => event(id, from + i));
    const commit = await log.append(id, batch, { epoch: epochs.get(id)! });
    if (commit.inserted.length !== n) throw new Error(`append stored ${commit.inserted.length} of ${n}`);
  });
  const [{ count }] = await sql`SELECT count(*)::bigint AS count FROM events`;
  if (count !== SESSIONS * EVENTS_PER_SESSION) throw new Error(`the log holds ${count} rows`);
  return rate;
}

async function main() {
  if (!await postgresBinDir()) {
    console.log(
      "pg ingest: skipped: no PostgreSQL binaries (initdb) found; scripts/setup.sh --test installs them",
    );
    return;
  }
  await using server = await startPostgres({ durable: true });
  const log = await PgEventLog.open(server.url, { max: POOL });
  const sql = connectPostgres(server.url, { max: POOL });
  try {
    await sql`CREATE TABLE raw_events(session_id text NOT NULL, seq bigint NOT NULL, ts bigint NOT NULL,
      type text NOT NULL, payload text NOT NULL, PRIMARY KEY(session_id, seq))`;
    const [{ server_version: version }] = await sql`SHOW server_version`;
    const rounds: { raw: number; log: number; share: number }[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const raw = await rawRate(sql);
      const logged = await logRate(log, sql);
      rounds.push({ raw, log: logged, share: logged / raw });
    }
    console.log(
      `pg ingest: ${SESSIONS} sessions × ${
        EVENTS_PER_SESSION.toLocaleString("en")
      } message_end appended ${BATCH} ` +
        `at a time through lib/storage/pg_event_log.ts (pool of ${POOL}); reference: raw INSERT … unnest of the ` +
        `same batches into the same PostgreSQL ${
          String(version).split(" ")[0]
        } (durable), measured just before`,
    );
    for (const r of rounds) {
      console.log(
        `  ${Math.round(r.log).toLocaleString("en")} events/s against ${
          Math.round(r.raw).toLocaleString("en")
        } rows/s raw: ${r.share.toFixed(2)}`,
      );
    }
    const median = [...rounds].sort((a, b) => a.share - b.share)[Math.floor(rounds.length / 2)];
    console.log(
      `  pg ingest = ${median.share.toFixed(2)} of raw, median of ${rounds.length} rounds (goal ≥ ${GOAL}): ${
        median.share >= GOAL ? "met" : "NOT met"
      }`,
    );
  } finally {
    await log.close();
    await sql.end();
  }
}

await main();
