/**
 * Daemon benchmark (issues 2 and 14): ingest rate of 50 plugin sockets sending `batch` frames against this
 * machine's raw node:sqlite rate in the same run, and the daemon's RSS after it. It also holds the fan-out load
 * with the plugin and 20 browsers in this one process (`fanOutLoad`), which bench/fanout.ts prints beside the
 * same load from independent client processes.
 * Run: `deno task bench` (all benches) or `deno run -A bench/daemon.ts`.
 */
import { DatabaseSync } from "node:sqlite";
import { startDaemon } from "../testing/daemon.ts";
import { connectAgent, connectBrowser, eventFrame, nodelayAgent } from "../testing/agent.ts";
import { PROTOCOL_VERSION } from "../lib/wire.ts";
import { cpuMs, daemonPid, rssMiB } from "../testing/proc.ts";
import { ROWS_PER_INSERT } from "../lib/row_buffer.ts";

const SOCKETS = 50;
const EVENTS_PER_SOCKET = 2000;
const BROWSERS = 20;
const DELTAS = 1000;
/** Events per `batch` frame: what the plugin puts in one when it has a backlog (~60 KB here). */
const BATCH = 200;
const INGEST_GOAL = 0.7;
const RSS_GOAL_MIB = 130;
const TEXT = "lorem ipsum dolor sit amet ".repeat(12).slice(0, 300);

const message = (i: number) => ({
  message: { role: "assistant", id: `m${i}`, text: TEXT, thinking: null, toolCalls: [], toolCallId: null },
});

/**
 * The reference: the same rows through node:sqlite in transactions of 1000, on this machine, now; one INSERT per
 * row (the reference) or, as the daemon's store inserts new rows (lib/row_buffer.ts), `perInsert` rows
 * per INSERT.
 */
async function rawSqliteRate(perInsert = 1): Promise<number> {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-bench-raw-" });
  const db = new DatabaseSync(`${dir}/raw.db`);
  db.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
  db.exec(
    `CREATE TABLE events(sessionId TEXT NOT NULL, seq INTEGER NOT NULL, ts INTEGER NOT NULL, type TEXT NOT NULL,
    payload TEXT NOT NULL, PRIMARY KEY(sessionId, seq))`,
  );
  const insert = db.prepare(
    `INSERT OR IGNORE INTO events VALUES ${Array(perInsert).fill("(?, ?, ?, ?, ?)").join(", ")}`,
  );
  const payload = JSON.stringify(message(0));
  const total = SOCKETS * EVENTS_PER_SOCKET;
  const t0 = performance.now();
  for (let i = 0; i < total; i += 1000) {
    db.exec("BEGIN");
    for (let j = i; j < i + 1000; j += perInsert) {
      const args: (string | number)[] = [];
      for (let k = j; k < j + perInsert; k++) {
        args.push(`session-${k % SOCKETS}`, Math.floor(k / SOCKETS) + 1, Date.now(), "message_end", payload);
      }
      insert.run(...args);
    }
    db.exec("COMMIT");
  }
  const rate = total / ((performance.now() - t0) / 1000);
  db.close();
  await Deno.remove(dir, { recursive: true });
  return rate;
}

/** What the ingest load needs of a daemon: its plugin socket, its token and a REST fetch. */
export interface IngestTarget {
  agentUrl: string;
  token: string;
  api(path: string): Promise<Response>;
}

/** How long the daemon is left quiet after the ingest before its RSS is read again (lib/memory.ts checks each s). */
const SETTLE_MS = 3000;

async function ingestRate() {
  await using d = await startDaemon();
  const pid = daemonPid(d.dataDir);
  let rssIdle = 0, cpu0 = 0;
  const rate = await ingestLoad(d, () => {
    rssIdle = rssMiB(pid);
    cpu0 = cpuMs(pid);
  });
  // CPU per event, all the daemon's threads: unlike the rate, it hardly moves with what else the cores run.
  const cpuUs = ((cpuMs(pid) - cpu0) * 1000) / (SOCKETS * EVENTS_PER_SOCKET);
  const rss = rssMiB(pid);
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  return { rate, rss, rssIdle, rssSettled: rssMiB(pid), cpuUs };
}

/**
 * The ingest load: 50 plugin sockets, each sending 2,000 `message_end` in `batch` frames, timed until every
 * event is readable over REST. `ready` runs once every socket is welcomed, before the clock starts.
 * @returns events per second.
 */
export async function ingestLoad(
  d: IngestTarget,
  ready: () => void | Promise<void> = () => {},
): Promise<number> {
  const agents = await Promise.all(
    Array.from({ length: SOCKETS }, (_, i) => connectAgent(d, { sessionId: `bench-${i}` })),
  );
  if (!(agents[0].welcome.features as string[] | undefined)?.includes("batch")) {
    throw new Error("the daemon does not advertise the batch feature");
  }
  await ready();
  // Frames are encoded before the clock starts: the 50 plugins would be 50 processes, not this one.
  const frames = agents.map((a) => {
    const events = Array.from(
      { length: EVENTS_PER_SOCKET },
      (_, i) => JSON.stringify(eventFrame(a.sessionId, i + 1, "message_end", message(i))),
    );
    const out: string[] = [];
    for (let i = 0; i < events.length; i += BATCH) {
      out.push(
        `{"v":${PROTOCOL_VERSION},"type":"batch","sessionId":"${a.sessionId}","seq":0,"ts":${Date.now()},"events":[${
          events.slice(i, i + BATCH).join(",")
        }]}`,
      );
    }
    return out;
  });
  const t0 = performance.now();
  await Promise.all(agents.map(async (a, n) => {
    for (const frame of frames[n]) {
      a.sendRaw(frame);
      // Yield between frames, as a plugin's queue would, so one socket does not hog the sender.
      await new Promise((r) => setTimeout(r, 0));
    }
  }));
  // Done when every event is readable through REST. Each GET /api/sessions costs the daemon ~0.45 ms of CPU
  // with 50 sessions, so polling it every 5 ms from the start took ~9% of the daemon away from the ingest it
  // measures: the acks (sent only after a commit, at most 50 ms late) say when the end is near; only then poll.
  const lastAck = (a: (typeof agents)[number]) =>
    Math.max(0, ...a.frames.filter((f) => f.type === "ack").map((f) => f.lastSeq as number));
  while (!agents.every((a) => lastAck(a) >= EVENTS_PER_SOCKET * 0.9)) {
    await new Promise((r) => setTimeout(r, 5));
  }
  while (true) {
    const sessions: { lastSeq: number }[] = await (await d.api("/api/sessions")).json();
    if (sessions.length === SOCKETS && sessions.every((s) => s.lastSeq === EVENTS_PER_SOCKET)) break;
    await new Promise((r) => setTimeout(r, 2));
  }
  const elapsed = (performance.now() - t0) / 1000;
  const check: unknown[] = await (await d.api(`/api/sessions/bench-7/events?after=${EVENTS_PER_SOCKET - 10}`))
    .json();
  if (check.length !== 10) throw new Error("events are not readable through REST");
  const errors = agents.flatMap((a) => a.frames.filter((f) => f.type === "error"));
  if (errors.length) {
    throw new Error(`the daemon refused ${errors.length} frames: ${JSON.stringify(errors[0])}`);
  }
  await Promise.all(agents.map((a) => a.close()));
  return (SOCKETS * EVENTS_PER_SOCKET) / elapsed;
}

/**
 * The fan-out load in this one process: one plugin streaming 1,000 deltas 1 ms apart, 20 browsers following;
 * their delays, sorted. The 20 browsers share this process's event loop, which adds to their delays.
 */
export async function fanOutLoad(
  d: { agentUrl: string; token: string; browserUrl: string },
): Promise<number[]> {
  const agent = await nodelayAgent(d.agentUrl, d.token, "fan");
  const delays: number[] = [];
  const browsers = await Promise.all(Array.from({ length: BROWSERS }, () => connectBrowser(d.browserUrl)));
  for (const b of browsers) {
    b.socket.onmessage = (e) => {
      const f = JSON.parse(e.data);
      if (f.type !== "events") return;
      const now = performance.timeOrigin + performance.now();
      for (const ev of f.events) if (ev.type === "message_update") delays.push(now - ev.sentAt);
    };
    b.send({ type: "subscribe", sessionId: "fan" });
  }
  // Wait until every browser is subscribed: a probe delta must reach all of them.
  while (delays.length < BROWSERS) {
    delays.length = 0;
    agent.send("message_update", { delta: "probe", sentAt: performance.timeOrigin + performance.now() });
    await new Promise((r) => setTimeout(r, 50));
  }
  delays.length = 0;
  for (let i = 0; i < DELTAS; i++) {
    agent.send("message_update", { delta: "tok ", sentAt: performance.timeOrigin + performance.now() });
    await new Promise((r) => setTimeout(r, 1)); // a token stream, not a burst
  }
  while (delays.length < DELTAS * BROWSERS) await new Promise((r) => setTimeout(r, 10));
  await Promise.all([...browsers.map((b) => b.close()), agent.close()]);
  return delays.sort((a, b) => a - b);
}

/** Rounds of (reference, ingest), one right after the other: the two cores' other work moves both. */
const ROUNDS = Number(Deno.env.get("ROUNDS") ?? 3);

if (import.meta.main) {
  const rounds = [];
  for (let i = 0; i < ROUNDS; i++) {
    const raw = await rawSqliteRate();
    const rawMany = await rawSqliteRate(ROWS_PER_INSERT);
    const ingest = await ingestRate();
    rounds.push({ raw, rawMany, ...ingest, share: ingest.rate / raw });
  }
  const byShare = [...rounds].sort((a, b) => a.share - b.share);
  const median = byShare[Math.floor(byShare.length / 2)];
  console.log(
    `daemon ingest: ${SOCKETS} sockets × ${EVENTS_PER_SOCKET} message_end in batch frames of ${BATCH}, until ` +
      `readable via REST; reference: raw node:sqlite batched insert of the same rows (one INSERT per row, transactions of 1000), measured just before`,
  );
  for (const r of rounds) {
    console.log(
      `  ${Math.round(r.rate).toLocaleString("en")} events/s against ${
        Math.round(r.raw).toLocaleString("en")
      } rows/s raw: ${r.share.toFixed(2)}; daemon CPU ${r.cpuUs.toFixed(1)} µs per event, raw ${
        (1e6 / r.raw).toFixed(1)
      } µs per row; raw ${ROWS_PER_INSERT} rows per INSERT ${
        Math.round(r.rawMany).toLocaleString("en")
      } rows/s: ${(r.rate / r.rawMany).toFixed(2)}`,
    );
  }
  console.log(
    `  ingest = ${
      median.share.toFixed(2)
    } of raw, median of ${rounds.length} rounds (goal ≥ ${INGEST_GOAL}): ${
      median.share >= INGEST_GOAL ? "met" : "NOT met"
    }`,
  );
  const settled = Math.max(...rounds.map((r) => r.rssSettled));
  console.log(
    `daemon RSS: ${median.rssIdle.toFixed(0)} MiB with the ${SOCKETS} sockets idle, ${
      rounds.map((r) => r.rss.toFixed(0)).join(" / ")
    } MiB as the ingest ends, ${rounds.map((r) => r.rssSettled.toFixed(0)).join(" / ")} MiB ${
      SETTLE_MS / 1000
    } s later (goal ≤ ${RSS_GOAL_MIB} MiB after the benchmark): ${
      settled <= RSS_GOAL_MIB ? "met" : "NOT met"
    }`,
  );
}
