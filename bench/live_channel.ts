/**
 * Live deltas across replicas (issue 23): replica A publishes `message_update` deltas on the live channel
 * (lib/storage/pg_live_channel.ts) at a steady `RATE` per second across `SESSIONS` sessions; replica B's
 * subscriber hears them. Latency per delta from A's `publish` to B's subscriber, p50 and p99, on PostgreSQL
 * (durable defaults; A and B with pools and LISTEN connections of their own) beside the reference measured in
 * the same run: the same deltas handed to an in-process subscriber, as a single daemon's hub gets them. Then
 * the two payload layouts under a burst (`BURST` deltas published at once): as many deltas per NOTIFY payload
 * as fit (the default) against one payload per delta, both one statement per round trip. Every run is also
 * checked: each delta once, in publish order.
 * Run: `deno task bench` (all benches) or `deno run -A bench/live_channel.ts`. PostgreSQL is skipped when it
 * is not installed.
 */
import { postgresBinDir, startPostgres } from "../testing/postgres.ts";
import { percentiles } from "../testing/event_feed.ts";
import { connectPostgres } from "../lib/storage/pg_client.ts";
import { LIVE_CHANNEL, PgLiveChannel } from "../lib/storage/pg_live_channel.ts";
import { type LiveChannel, type LiveDelta, LiveSubscribers } from "../lib/storage/live_channel.ts";

const SESSIONS = 10;
/** Deltas per second, all sessions together (a few answers streaming at once). */
const RATE = 200;
const SECONDS = 5;
const BURST = 5_000;
const BURST_ROUNDS = 15;
/** What a streamed word may take to show on another replica's browsers before it feels late. */
const GOAL_MS = 100;

interface Figures {
  p50: number;
  p99: number;
  max: number;
  deltas: number;
  lost: number;
}

/** A `message_update` as browsers receive it (a word or two of text). */
function delta(i: number): LiveDelta {
  const sessionId = `bench-live-${i % SESSIONS}`;
  const seq = 10 + Math.floor(i / SESSIONS);
  const json = JSON.stringify({
    v: 1,
    sessionId,
    seq,
    ts: Date.now(),
    type: "message_update",
    delta: ` word${i} and`,
  });
  return { sessionId, after: 9, json };
}

/** B's side: when each delta arrived, and whether they came once each, in order. */
class Hearing {
  sentAt: number[] = [];
  latencies: number[] = [];
  next = 0;
  faults = 0;
  #index = new Map<string, number>();

  sent(d: LiveDelta, i: number): void {
    this.#index.set(d.json, i);
    this.sentAt[i] = performance.now();
  }

  heard = (d: LiveDelta): void => {
    const i = this.#index.get(d.json);
    if (i !== this.next) this.faults++;
    if (i === undefined) return;
    this.latencies.push(performance.now() - this.sentAt[i]);
    this.next = i + 1;
  };
}

async function waitUntil(check: () => boolean, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what} within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** `RATE` deltas a second for `SECONDS` from `publish`'s side, heard through `subscribe`. */
async function paced(a: Pick<LiveChannel, "publish">, b: Pick<LiveChannel, "subscribe">): Promise<Figures> {
  const total = RATE * SECONDS;
  const deltas = Array.from({ length: total }, (_, i) => delta(i));
  const h = new Hearing();
  const stop = b.subscribe(h.heard);
  let next = performance.now();
  for (let i = 0; i < total; i++) {
    h.sent(deltas[i], i);
    a.publish(deltas[i]);
    next += 1_000 / RATE;
    const wait = next - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  }
  await waitUntil(() => h.next >= total, "B did not hear every delta", 5_000).catch(() => {});
  stop();
  if (h.faults) throw new Error(`order broken: ${h.faults} delta(s) out of place or twice`);
  return { ...percentiles(h.latencies), deltas: total, lost: total - h.latencies.length };
}

/** Seconds from publishing `BURST` deltas at once to B hearing the last. */
async function burst(a: PgLiveChannel, b: PgLiveChannel): Promise<number> {
  const h = new Hearing();
  const stop = b.subscribe(h.heard);
  const deltas = Array.from({ length: BURST }, (_, i) => delta(i));
  const t0 = performance.now();
  deltas.forEach((d, i) => {
    h.sent(d, i);
    a.publish(d);
  });
  await waitUntil(() => h.next >= BURST, `B did not hear all ${BURST} deltas`, 60_000);
  const seconds = (performance.now() - t0) / 1000;
  stop();
  if (h.faults || a.dropped) throw new Error(`burst: ${h.faults} out of place, ${a.dropped} dropped`);
  return seconds;
}

async function pair(url: string, pack: boolean) {
  const a = PgLiveChannel.open(url, { pack });
  const b = PgLiveChannel.open(url, { pack });
  // One delta first: the LISTEN and the pools' connections are made before the clock runs.
  let heard = 0;
  const stop = b.subscribe(() => heard++);
  await b.listening();
  a.publish(delta(0));
  await waitUntil(() => heard > 0, "the first delta");
  stop();
  return { a, b, close: async () => (await a.close(), await b.close()) };
}

async function postgresFigures() {
  if (!await postgresBinDir()) return null;
  await using server = await startPostgres({ durable: true });
  const sql = connectPostgres(server.url, { max: 1 });
  const [{ server_version: version }] = await sql`SHOW server_version`;
  await sql.end();
  const packed = await pair(server.url, true);
  // A database of its own: NOTIFY reaches every listener of its database, and these are the other layout's.
  const single = await pair(await server.newDatabase(), false);
  try {
    const figures = await paced(packed.a, packed.b);
    // Alternating, so both layouts see the same load of the shared machine; the median of each.
    const packedBursts: number[] = [];
    const singleBursts: number[] = [];
    for (let r = 0; r < BURST_ROUNDS; r++) {
      packedBursts.push(await burst(packed.a, packed.b));
      singleBursts.push(await burst(single.a, single.b));
    }
    const spread = (xs: number[]) => {
      const sorted = xs.sort((x, y) => x - y);
      return { best: sorted[0], median: sorted[Math.floor(sorted.length / 2)] };
    };
    return {
      figures,
      version: String(version).split(" ")[0],
      packedBurst: spread(packedBursts),
      singleBurst: spread(singleBursts),
    };
  } finally {
    await single.close();
    await packed.close();
  }
}

/** The reference: the same deltas handed to an in-process subscriber, as a single daemon's hub is called. */
function inProcessFigures(): Promise<Figures> {
  const subscribers = new LiveSubscribers();
  return paced(
    { publish: (d) => subscribers.deliver(d) },
    { subscribe: (fn) => subscribers.add(fn) },
  );
}

const show = (name: string, f: Figures) =>
  `  ${name}: p50 ${f.p50.toFixed(3)} ms, p99 ${f.p99.toFixed(3)} ms, max ${
    f.max.toFixed(2)
  } ms over ${f.deltas} deltas, ${f.lost} lost`;

console.log(
  `live channel: ${RATE} deltas/s over ${SESSIONS} sessions for ${SECONDS} s published on replica A; latency ` +
    `from A's publish to B's subscriber (goal p99 < ${GOAL_MS} ms)`,
);
const pg = await postgresFigures();
if (pg) {
  console.log(
    show(`PostgreSQL ${pg.version} (durable), NOTIFY ${LIVE_CHANNEL}`, pg.figures) +
      ` (goal ${pg.figures.p99 < GOAL_MS && pg.figures.lost === 0 ? "met" : "NOT met"})`,
  );
} else {
  console.log(
    "  PostgreSQL: skipped: no PostgreSQL binaries (initdb) found; scripts/setup.sh --test installs them",
  );
}
console.log(show("in-process call (the reference: one daemon's hub)", await inProcessFigures()));
if (pg) {
  const rate = (s: number) => `${(BURST / s / 1000).toFixed(0)}k/s`;
  const burstOf = (b: { best: number; median: number }) =>
    `median ${(b.median * 1000).toFixed(0)} ms (${rate(b.median)}), best ${(b.best * 1000).toFixed(0)} ms (${
      rate(b.best)
    })`;
  console.log(
    `  a burst of ${BURST} deltas published at once, until B heard the last (${BURST_ROUNDS} rounds each, ` +
      `alternating): packed payloads (the default) ${burstOf(pg.packedBurst)}; one payload per delta ${
        burstOf(pg.singleBurst)
      }`,
  );
}
