/**
 * Usage reports at scale (`deno task bench`; `deno run -A bench/usage.ts --events 1000000` for more): the same
 * log of 200,000 events of 300 sessions over 60 days goes into two real SQLite stores batch by batch in turn
 * (so both meet the same machine load): one plain, one that also keeps the per-run usage table as the daemon
 * does after each commit (lib/usage_runs.ts `UsageRuns`). Printed: the ingest rate of each side by side, then the
 * answer time of `GET /api/usage` for the last 30 days (p50 over 20 answers, by day and by repo) read from the
 * log as before the table and from the table, beside a plain `SELECT count(*)` over the same range of events
 * as the reference. Goals: the answer under 200 ms; ingest with the table ≥ 0.8 of its rate without. The
 * table costs one row write per run changed in each 250 ms, not per event: these runs are short (9 events), so
 * this is its dearest case; runs of a real agent carry many more events each.
 */
import { Store } from "../lib/store.ts";
import { groupRuns, runsIn } from "../lib/usage.ts";
import { UsageRuns } from "../lib/usage_runs.ts";
import type { AgentEvent, SessionInfo } from "../lib/protocol.ts";
import { eventFrame } from "../testing/agent.ts";

const arg = (name: string, fallback: number) => {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 ? Number(Deno.args[i + 1]) : fallback;
};
const EVENTS = arg("events", 200_000);
const SESSIONS = 300;
const DAYS = 60;
/** Events per appendBatch: what one ingest tick commits under load. */
const BATCH = 500;
const ANSWERS = 20;
const ANSWER_GOAL_MS = 200;
const INGEST_GOAL = 0.8;
const DAY_MS = 86_400_000;
/** How often the daemon writes counted rows (lib/usage_runs.ts). */
const WRITE_EVERY_MS = 250;

let seed = 7;
/** mulberry32: a deterministic generator, so every run measures the same log. */
function rand(): number {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const words = (n: number) => Array.from({ length: n }, () => `w${Math.floor(rand() * 5000)}`).join(" ");

/** One run as a plugin reports it: prompt, two assistant messages with usage around a tool call. */
function* run(sessionId: string, start: number, ts: number): Generator<AgentEvent> {
  let seq = start;
  const ev = (type: string, payload: Record<string, unknown>) =>
    eventFrame(sessionId, seq++, type, payload, ts + seq) as AgentEvent;
  const model = rand() < 0.7 ? "claude-sonnet" : "gpt-5";
  const usage = () => ({
    inputTokens: 2000 + Math.floor(rand() * 8000),
    outputTokens: 100 + Math.floor(rand() * 900),
    totalCost: rand() * 0.05,
  });
  yield ev("agent_start", {});
  yield ev("message_end", {
    message: { role: "user", id: `m${seq}`, text: words(20) },
    from: { by: ["alice", "bob", "carol"][Math.floor(rand() * 3)] },
  });
  yield ev("message_start", { message: { role: "assistant", id: `m${seq}` } });
  yield ev("message_end", {
    message: { role: "assistant", id: `m${seq}`, model, text: words(80), usage: usage() },
  });
  const call = `c${seq}`;
  yield ev("tool_execution_start", { toolCallId: call, toolName: "bash", args: { command: "npm test" } });
  yield ev("tool_execution_end", {
    toolCallId: call,
    toolName: "bash",
    isError: false,
    resultPreview: words(100),
  });
  yield ev("message_end", { message: { role: "toolResult", id: `m${seq}`, text: "(see tool output)" } });
  yield ev("message_end", {
    message: { role: "assistant", id: `m${seq}`, model, text: words(40), usage: usage() },
  });
  yield ev("agent_end", { usage: { inputTokens: 1, outputTokens: 1, totalCost: 0 } });
}

function info(id: string, i: number): SessionInfo {
  return {
    id,
    name: `bench session ${i}`,
    cwd: `/home/dev/src/project-${i}`,
    model: "claude-sonnet",
    provider: "p",
    agent: i % 2 === 0,
    repo: i % 2 === 0 ? `team/repo-${i % 25}` : null,
    startedAt: 1_700_000_000_000,
  } as SessionInfo;
}

const p50 = (times: number[]) => times.sort((a, b) => a - b)[Math.floor(times.length / 2)];
function time(fn: () => unknown): number[] {
  fn(); // warm-up
  return Array.from({ length: ANSWERS }, () => {
    const t0 = performance.now();
    fn();
    return performance.now() - t0;
  });
}

const dir = await Deno.makeTempDir({ prefix: "lvmh-bench-usage-" });
try {
  // Both without the search index, which is the same on either side and would only dilute the comparison.
  const plain = new Store(`${dir}/plain.db`, { search: false });
  const kept = new Store(`${dir}/kept.db`, { search: false });
  const usage = new UsageRuns(kept.db);
  const ids = Array.from({ length: SESSIONS }, (_, i) => `bench-u${i}`);
  ids.forEach((id, i) => (plain.upsertSession(info(id, i)), kept.upsertSession(info(id, i))));
  const next = new Map(ids.map((id) => [id, 1]));
  const now = Date.now();
  const t0 = now - DAYS * DAY_MS;
  let plainMs = 0;
  let keptMs = 0;
  let stored = 0;
  let turn = 0;
  let lastWrite = performance.now();
  while (stored < EVENTS) {
    const batch: AgentEvent[] = [];
    const ts = t0 + Math.floor((stored / EVENTS) * DAYS * DAY_MS);
    while (batch.length < BATCH) {
      const id = ids[Math.floor(rand() * ids.length)];
      for (const e of run(id, next.get(id)!, ts)) batch.push(e);
      next.set(id, next.get(id)! + 9);
    }
    const sides = [
      () => {
        const t = performance.now();
        plain.appendBatch(batch);
        plainMs += performance.now() - t;
      },
      () => {
        // What the daemon's ingest does: store, then count each committed session's new runs; the counted
        // rows are written by a timer every 250 ms of the daemon's time, which this loop never yields to, so
        // it writes them itself as often (timed with the rest).
        const t = performance.now();
        usage.committed(kept.appendBatch(batch));
        if (t - lastWrite >= WRITE_EVERY_MS) {
          usage.flush();
          lastWrite = t;
        }
        keptMs += performance.now() - t;
      },
    ];
    // Alternate which store goes first, so neither always meets a warmer cache.
    if (turn++ % 2) sides.reverse();
    for (const side of sides) side();
    stored += batch.length;
  }
  const t = performance.now();
  usage.flush();
  keptMs += performance.now() - t;
  const rate = (ms: number) => stored / (ms / 1000);
  const ratio = rate(keptMs) / rate(plainMs);
  const runs = (kept.db.prepare("SELECT count(*) AS n FROM usage_runs").get() as { n: number }).n;
  console.log(
    `ingest of ${stored.toLocaleString("en")} events (${
      runs.toLocaleString("en")
    } runs, ${SESSIONS} sessions) ` +
      `in batches of ${BATCH}: ${
        Math.round(rate(plainMs)).toLocaleString("en")
      } events/s without the usage ` +
      `table, ${Math.round(rate(keptMs)).toLocaleString("en")} events/s with it: ${ratio.toFixed(2)} ` +
      `(goal ≥ ${INGEST_GOAL}) ${ratio >= INGEST_GOAL ? "OK" : "UNDER GOAL"}`,
  );

  const to = Date.parse(`${new Date(now).toISOString().slice(0, 10)}T00:00:00Z`) + DAY_MS;
  const from = to - 30 * DAY_MS;
  const sessions = kept.listSessions();
  const count = kept.db.prepare("SELECT count(*) AS n FROM events WHERE ts >= ? AND ts < ?");
  const inRange = (count.get(from, to) as { n: number }).n;
  const reference = p50(time(() => count.get(from, to)));
  const fromLog = p50(time(() => groupRuns(runsIn(kept.db, sessions, from, to), "day")));
  const byDay = p50(time(() => groupRuns(usage.runs(kept.listSessions(), from, to), "day")));
  const byRepo = p50(time(() => groupRuns(usage.runs(kept.listSessions(), from, to), "repo")));
  const same = JSON.stringify(groupRuns(runsIn(kept.db, sessions, from, to), "repo")) ===
    JSON.stringify(groupRuns(usage.runs(sessions, from, to), "repo"));
  console.log(
    `GET /api/usage, last 30 days (${inRange.toLocaleString("en")} events): reference SELECT count(*) ` +
      `${reference.toFixed(1)} ms; from the log ${fromLog.toFixed(1)} ms; from the usage table by day ` +
      `${byDay.toFixed(1)} ms, by repo ${
        byRepo.toFixed(1)
      } ms (p50 of ${ANSWERS}; goal < ${ANSWER_GOAL_MS} ms) ` +
      `${Math.max(byDay, byRepo) < ANSWER_GOAL_MS ? "OK" : "OVER GOAL"}; same rows as the log: ${
        same ? "yes" : "NO"
      }`,
  );
  for (const s of [plain, kept]) s.db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  const extra = (await Deno.stat(`${dir}/kept.db`)).size - (await Deno.stat(`${dir}/plain.db`)).size;
  console.log(`size of the usage table and its index: ${(extra / 1024 / 1024).toFixed(1)} MiB`);
  usage.close();
  plain.close();
  kept.close();
  if (!same) Deno.exitCode = 1;
} finally {
  await Deno.remove(dir, { recursive: true });
}
