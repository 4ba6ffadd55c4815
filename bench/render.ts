/**
 * Server render time of a session page whose session holds 100,000 stored events (goal: under 150 ms).
 * Builds a real SQLite store in a temp dir, fills it with a realistic mix of events, then times the page
 * route end to end through the in-process daemon's handler (router, credentials, store query, conversation
 * fold, Preact render, Markdown) including the body read.
 */
import { Store } from "../lib/store.ts";
import { fillHistory, viewerPages } from "../testing/ui_fill.ts";
import { startInProcess } from "../testing/inproc.ts";

const EVENTS = 100_000;
const GOAL_MS = 150;
const RUNS = 30;
const ID = "bench-session";

const dir = await Deno.makeTempDir({ prefix: "lvmh-bench-render-" });
try {
  const store = new Store(`${dir}/lvmh.db`);
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
  fillHistory(store, ID, EVENTS, 1_700_000_000_000);
  const stored = store.lastSeq(ID);
  store.close();

  const d = await startInProcess({ dataDir: dir });
  const page = await viewerPages(d);
  const once = async () => {
    const t0 = performance.now();
    const res = await page(`/sessions/${ID}`);
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
  // The in-process daemon records the console while it lives: stop it before printing the figures.
  await d.stop();
  times.sort((a, b) => a - b);
  const p50 = times[Math.floor(RUNS / 2)];
  const p95 = times[Math.floor(RUNS * 0.95)];
  console.log(
    `session page render, ${stored.toLocaleString("en")} stored events: p50 ${p50.toFixed(1)} ms, ` +
      `p95 ${p95.toFixed(1)} ms, ${(bytes / 1024).toFixed(0)} KiB HTML (goal < ${GOAL_MS} ms) ` +
      (p95 < GOAL_MS ? "OK" : "OVER GOAL"),
  );
} finally {
  await Deno.remove(dir, { recursive: true });
}
