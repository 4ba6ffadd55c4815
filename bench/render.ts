/**
 * Server render time of a session page whose session holds 100,000 stored events (goal: under 150 ms).
 * Builds a real SQLite store in a temp dir, fills it with a realistic mix of events, then times the page
 * route's handler end to end (store query, conversation fold, Preact render, Markdown) including the body read.
 */
import { Store } from "../lib/store.ts";
import { Hub } from "../lib/hub.ts";
import { Ingest } from "../lib/ingest.ts";
import { Sessions } from "../lib/sessions.ts";
import type { AgentEvent } from "../lib/protocol.ts";
import { runEvents } from "../testing/ui_fill.ts";
import type { App } from "../lib/app.ts";
import type { Ctx } from "../lib/router.ts";
import { handler } from "../routes/sessions/[id].tsx";

const EVENTS = 100_000;
const GOAL_MS = 150;
const RUNS = 30;
const ID = "bench-session";

const dir = await Deno.makeTempDir({ prefix: "lvmh-bench-render-" });
const store = new Store(`${dir}/bench.db`);
try {
  store.upsertSession({
    id: ID,
    name: "render benchmark",
    cwd: "/home/dev/project",
    model: "fake",
    provider: "fake",
    agent: false,
    repo: null,
    startedAt: 1_700_000_000_000,
  });
  let batch: AgentEvent[] = [];
  let seq = 1;
  while (seq <= EVENTS) {
    for (const e of runEvents(ID, seq, 1_700_000_000_000)) {
      if (e.seq > EVENTS) break;
      batch.push(e);
    }
    seq += 10;
    if (batch.length >= 2000) {
      store.appendBatch(batch);
      batch = [];
    }
  }
  if (batch.length) store.appendBatch(batch);
  const stored = store.lastSeq(ID);

  const hub = new Hub();
  const sessions = new Sessions(store, new Ingest(store, hub), hub, { defaultAsk: [] });
  const app = { store, sessions } as unknown as App;
  const url = new URL(`http://127.0.0.1/sessions/${ID}`);
  const ctx = (): Ctx => ({
    req: new Request(url),
    url,
    params: { id: ID },
    app,
    principal: { via: "cookie", name: "bench", role: "viewer" },
    info: {} as Deno.ServeHandlerInfo,
    audit() {},
  });
  const once = async () => {
    const t0 = performance.now();
    const res = await handler.GET(ctx());
    const html = await res.text();
    const ms = performance.now() - t0;
    if (res.status !== 200 || !html.includes('data-island="SessionView"')) throw new Error("bad render");
    return { ms, bytes: html.length };
  };
  for (let i = 0; i < 5; i++) await once(); // warm-up (JIT, SQLite page cache)
  const times: number[] = [];
  let bytes = 0;
  for (let i = 0; i < RUNS; i++) {
    const r = await once();
    times.push(r.ms);
    bytes = r.bytes;
  }
  times.sort((a, b) => a - b);
  const p50 = times[Math.floor(RUNS / 2)];
  const p95 = times[Math.floor(RUNS * 0.95)];
  console.log(
    `session page render, ${stored.toLocaleString("en")} stored events: p50 ${p50.toFixed(1)} ms, ` +
      `p95 ${p95.toFixed(1)} ms, ${(bytes / 1024).toFixed(0)} KiB HTML (goal < ${GOAL_MS} ms) ` +
      (p95 < GOAL_MS ? "OK" : "OVER GOAL"),
  );
} finally {
  store.close();
  await Deno.remove(dir, { recursive: true });
}
