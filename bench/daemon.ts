/**
 * Daemon benchmark (issues 2 and 14): ingest rate of 50 plugin sockets sending `batch` frames against this
 * machine's raw node:sqlite rate in the same run, the daemon's RSS after it, and the fan-out delay of
 * `message_update` to 20 browsers following one session.
 * Run: `deno task bench` (all benches) or `deno run -A bench/daemon.ts`.
 */
import { DatabaseSync } from "node:sqlite";
import WebSocket from "ws";
import { startDaemon } from "../tests/_daemon.ts";
import { connectAgent, connectBrowser } from "../tests/_agent_client.ts";
import { daemonPid, rssMiB } from "./_proc.ts";

const SOCKETS = 50;
const EVENTS_PER_SOCKET = 2000;
const BROWSERS = 20;
const DELTAS = 1000;
/** Events per `batch` frame: what the plugin puts in one when it has a backlog (~60 KB here). */
const BATCH = 200;
const INGEST_GOAL = 0.7;
const RSS_GOAL_MIB = 130;
const FANOUT_GOAL_MS = 2;
const TEXT = "lorem ipsum dolor sit amet ".repeat(12).slice(0, 300);

const message = (i: number) => ({
  message: { role: "assistant", id: `m${i}`, text: TEXT, thinking: null, toolCalls: [], toolCallId: null },
});

/** The reference: the same rows through node:sqlite in transactions of 1000, on this machine, now. */
async function rawSqliteRate(): Promise<number> {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-bench-raw-" });
  const db = new DatabaseSync(`${dir}/raw.db`);
  db.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
  db.exec(
    `CREATE TABLE events(sessionId TEXT NOT NULL, seq INTEGER NOT NULL, ts INTEGER NOT NULL, type TEXT NOT NULL,
    payload TEXT NOT NULL, PRIMARY KEY(sessionId, seq))`,
  );
  const insert = db.prepare("INSERT OR IGNORE INTO events VALUES (?, ?, ?, ?, ?)");
  const payload = JSON.stringify(message(0));
  const total = SOCKETS * EVENTS_PER_SOCKET;
  const t0 = performance.now();
  for (let i = 0; i < total; i += 1000) {
    db.exec("BEGIN");
    for (let j = i; j < i + 1000; j++) {
      insert.run(`session-${j % SOCKETS}`, Math.floor(j / SOCKETS) + 1, Date.now(), "message_end", payload);
    }
    db.exec("COMMIT");
  }
  const rate = total / ((performance.now() - t0) / 1000);
  db.close();
  await Deno.remove(dir, { recursive: true });
  return rate;
}

async function ingestRate(): Promise<{ rate: number; rss: number; rssIdle: number }> {
  await using d = await startDaemon();
  const pid = daemonPid(d.dataDir);
  const agents = await Promise.all(
    Array.from({ length: SOCKETS }, (_, i) => connectAgent(d, { sessionId: `bench-${i}` })),
  );
  if (!(agents[0].welcome.features as string[] | undefined)?.includes("batch")) {
    throw new Error("the daemon does not advertise the batch feature");
  }
  const rssIdle = rssMiB(pid);
  // Frames are encoded before the clock starts: the 50 plugins would be 50 processes, not this one.
  const frames = agents.map((a) => {
    const events = Array.from({ length: EVENTS_PER_SOCKET }, (_, i) =>
      JSON.stringify({
        v: 1,
        sessionId: a.sessionId,
        seq: i + 1,
        ts: Date.now(),
        type: "message_end",
        ...message(i),
      }));
    const out: string[] = [];
    for (let i = 0; i < events.length; i += BATCH) {
      out.push(
        `{"v":1,"type":"batch","sessionId":"${a.sessionId}","seq":0,"ts":${Date.now()},"events":[${
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
  // Done when every event is readable through REST.
  while (true) {
    const sessions: { lastSeq: number }[] = await (await d.api("/api/sessions")).json();
    if (sessions.length === SOCKETS && sessions.every((s) => s.lastSeq === EVENTS_PER_SOCKET)) break;
    await new Promise((r) => setTimeout(r, 5));
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
  return { rate: (SOCKETS * EVENTS_PER_SOCKET) / elapsed, rss: rssMiB(pid), rssIdle };
}

/** A plugin-side socket from npm `ws`, as the real plugin uses: TCP_NODELAY, so no delta waits for Nagle. */
async function nodelayAgent(url: string, token: string, sessionId: string) {
  const ws = new WebSocket(url, { headers: { authorization: `Bearer ${token}` } });
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  const welcomed = new Promise((resolve) => ws.once("message", resolve));
  ws.send(JSON.stringify({
    v: 1,
    type: "hello",
    sessionId,
    seq: 0,
    ts: Date.now(),
    session: {
      id: sessionId,
      name: "fan",
      cwd: "/",
      model: "m",
      provider: "p",
      agent: false,
      repo: null,
      startedAt: 1_700_000_000_000,
    },
  }));
  await welcomed;
  let seq = 1;
  return {
    send: (type: string, payload: Record<string, unknown>) =>
      ws.send(JSON.stringify({ v: 1, sessionId, seq: seq++, ts: Date.now(), type, ...payload })),
    close: () => new Promise((resolve) => (ws.once("close", resolve), ws.close())),
  };
}

async function fanOutDelays(): Promise<number[]> {
  await using d = await startDaemon();
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

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];

if (import.meta.main) {
  const raw = await rawSqliteRate();
  const ingest = await ingestRate();
  const delays = await fanOutDelays();
  const share = ingest.rate / raw;
  console.log(
    `daemon ingest: ${Math.round(ingest.rate).toLocaleString("en")} events/s ` +
      `(${SOCKETS} sockets × ${EVENTS_PER_SOCKET} message_end in batch frames of ${BATCH}, until readable via REST)`,
  );
  console.log(
    `  reference, raw node:sqlite batched insert of the same rows: ${
      Math.round(raw).toLocaleString("en")
    } rows/s`,
  );
  console.log(
    `  ingest = ${share.toFixed(2)} of raw (goal ≥ ${INGEST_GOAL}): ${
      share >= INGEST_GOAL ? "met" : "NOT met"
    }`,
  );
  console.log(
    `daemon RSS: ${ingest.rssIdle.toFixed(0)} MiB with the ${SOCKETS} sockets idle, ${
      ingest.rss.toFixed(0)
    } MiB after the ingest (goal ≤ ${RSS_GOAL_MIB} MiB): ${ingest.rss <= RSS_GOAL_MIB ? "met" : "NOT met"}`,
  );
  const p50 = pct(delays, 0.5), p99 = pct(delays, 0.99);
  console.log(
    `daemon fan-out of message_update to ${BROWSERS} browsers, ${delays.length} deliveries: ` +
      `p50 ${p50.toFixed(2)} ms, p99 ${p99.toFixed(2)} ms, max ${delays.at(-1)!.toFixed(2)} ms ` +
      `(goal p99 < ${FANOUT_GOAL_MS} ms): ${p99 < FANOUT_GOAL_MS ? "met" : "NOT met"}`,
  );
}
