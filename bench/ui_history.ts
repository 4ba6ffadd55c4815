/**
 * A session page with 100,000 stored events in real Chromium against a real daemon: time to interactive (goal
 * < 1 s) and scrolling back through the history — frames per second measured with requestAnimationFrame while
 * the reader scrolls up and older pages load (goal 60 fps). The store is filled here; the browser half runs in
 * its own process (bench/_ui_history_browser.ts) because playwright-core must stay out of deno.lock.
 */
import { Store } from "../lib/store.ts";
import { benchInfo, fillHistory, runWithThrowawayLock } from "../testing/ui_fill.ts";

const EVENTS = 100_000;
const ID = "bench-history";
const T0 = 1_700_000_000_000;

const dir = await Deno.makeTempDir({ prefix: "lvmh-bench-history-" });
try {
  const store = new Store(`${dir}/lvmh.db`);
  store.upsertSession({ ...benchInfo(ID, 1, T0), name: "history benchmark" });
  fillHistory(store, ID, EVENTS, T0);
  store.close();
  const code = await runWithThrowawayLock(new URL("_ui_history_browser.ts", import.meta.url).pathname, [
    dir,
    ID,
  ]);
  if (code !== 0) throw new Error(`the browser half exited with ${code}`);
} finally {
  await Deno.remove(dir, { recursive: true });
}
