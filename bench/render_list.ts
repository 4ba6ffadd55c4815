/**
 * The sessions page with 3,000 sessions. Server: the `/` route's handler end to end (registry list with each
 * session's glance, Preact render of the first page of rows, the island's props) over a real SQLite store —
 * goal p95 < 100 ms, beside the reference of `sessions.list()` alone. Browser (bench/_render_list_browser.ts,
 * real daemon, real Chromium): time to interactive and the time of a filter keystroke.
 */
import { Store } from "../lib/store.ts";
import { benchInfo, fillSessions, runWithThrowawayLock, viewerPages } from "../testing/ui_fill.ts";
import { startInProcess } from "../testing/inproc.ts";
import { pct } from "../testing/proc.ts";

const COUNT = 3000;
const RUNS_PER_SESSION = 2;
const GOAL_MS = 100;
const RUNS = 30;
const T0 = 1_700_000_000_000;

const dir = await Deno.makeTempDir({ prefix: "lvmh-bench-list-" });
try {
  {
    const store = new Store(`${dir}/lvmh.db`);
    fillSessions(store, COUNT, RUNS_PER_SESSION, T0);
    store.close();
  }
  // The first registry on this file builds every glance from the stored events (the one-time backfill), in
  // the daemon's start.
  const t = performance.now();
  const d = await startInProcess({ dataDir: dir });
  const backfillMs = performance.now() - t;
  const { sessions } = d.daemon.app;
  // A third of them online, as when many agents run at once.
  for (let i = 0; i < COUNT; i += 3) {
    sessions.connect(benchInfo(`bench-${i}`, i, T0), { send() {}, close() {} });
  }

  const page = await viewerPages(d);
  const once = async () => {
    const t0 = performance.now();
    const res = await page("/");
    const html = await res.text();
    const ms = performance.now() - t0;
    if (res.status !== 200 || !html.includes('data-session="bench-')) throw new Error("bad render");
    return { ms, bytes: html.length };
  };
  const list = () => {
    const t0 = performance.now();
    if (sessions.list().length !== COUNT) throw new Error("bad list");
    return performance.now() - t0;
  };
  for (let i = 0; i < 5; i++) (await once(), list()); // warm-up (JIT, SQLite page cache)
  const times: number[] = [];
  const refs: number[] = [];
  let bytes = 0;
  for (let i = 0; i < RUNS; i++) {
    const r = await once();
    times.push(r.ms);
    refs.push(list());
    bytes = r.bytes;
  }
  // The in-process daemon records the console while it lives: stop it before printing the figures.
  await d.stop();
  times.sort((a, b) => a - b);
  refs.sort((a, b) => a - b);
  const p95 = pct(times, 0.95);
  console.log(
    `sessions page render, ${COUNT.toLocaleString("en")} sessions: p50 ${pct(times, 0.5).toFixed(1)} ms, ` +
      `p95 ${p95.toFixed(1)} ms, ${(bytes / 1024).toFixed(0)} KiB HTML (goal < ${GOAL_MS} ms) ` +
      (p95 < GOAL_MS ? "OK" : "OVER GOAL"),
  );
  console.log(
    `  reference: sessions.list() alone p50 ${pct(refs, 0.5).toFixed(1)} ms, p95 ${
      pct(refs, 0.95).toFixed(1)
    } ms;` +
      ` one-time glance backfill of ${
        (COUNT * RUNS_PER_SESSION * 10).toLocaleString("en")
      } events in the daemon's start ` +
      `${backfillMs.toFixed(0)} ms`,
  );

  // The browser half runs in its own process: it loads playwright-core, which must stay out of deno.lock.
  const code = await runWithThrowawayLock(new URL("_render_list_browser.ts", import.meta.url).pathname, [
    dir,
  ]);
  if (code !== 0) throw new Error(`the browser half exited with ${code}`);
} finally {
  await Deno.remove(dir, { recursive: true });
}
