/**
 * Browser half of bench/render_list.ts (own process: it loads playwright-core). A real daemon on the data
 * dir that bench filled with 3,000 sessions, ten of them online through scripted plugins and one streaming
 * text all along (so the list gets a `session_update` every tick, as with agents at work); real Chromium loads
 * `/` three times — time to interactive — then types into the filter — time from each keystroke to the next
 * frame with the filtered rows.
 * Args: dataDir
 */
import { startDaemon } from "../testing/daemon.ts";
import { connectAgent } from "../testing/agent.ts";
import { launchBrowser, openPage } from "../testing/chromium.ts";
import { benchInfo } from "../testing/ui_fill.ts";
import { installTiming, readTiming } from "./_ui_timing.ts";
import { pct } from "../testing/proc.ts";

const TTI_GOAL_MS = 1000;
const KEY_GOAL_MS = 100;
const T0 = 1_700_000_000_000;
const [dataDir] = Deno.args;

const daemon = await startDaemon({ dataDir });
const agents = await Promise.all(
  Array.from(
    { length: 10 },
    (_, i) => connectAgent(daemon, { sessionId: `bench-${i}`, session: benchInfo(`bench-${i}`, i, T0) }),
  ),
);
const streamer = agents[0];
streamer.send("agent_start");
streamer.send("message_start", { message: { role: "assistant", id: "live" } });
let words = 0;
const stream = setInterval(() => streamer.send("message_update", { delta: ` word${words++}` }), 20);
const browser = await launchBrowser();
try {
  const loads = [];
  let keys: number[] = [];
  for (let n = 0; n < 3; n++) {
    const ui = await openPage(browser, daemon, { signIn: true });
    try {
      await installTiming(ui.page);
      await ui.page.goto(`${daemon.url}/`);
      await ui.page.waitForSelector("[data-session='bench-0'] .activity:text('running: …')", {
        timeout: 30_000,
      })
        .catch(() => ui.page.waitForSelector("[data-session='bench-0']"));
      const t = await readTiming(ui.page);
      loads.push(t);
      if (n === 2) {
        // One keystroke at a time, as a person types; each narrows the 3,000 rows further.
        await ui.page.click("#filter");
        for (const ch of "project-29") {
          await ui.page.keyboard.type(ch);
          await new Promise((r) => setTimeout(r, 150));
        }
        const rows = await ui.page.locator(".session-row").count();
        keys = (await readTiming(ui.page, 200)).inputs;
        if (rows === 0 || rows > 100) throw new Error(`filter shows ${rows} rows`);
      }
      if (ui.problems.length) throw new Error(ui.problems.join("\n"));
    } finally {
      await ui.close();
    }
  }
  const tti = loads.map((l) => l.interactive).sort((a, b) => a - b);
  const hydrated = loads.map((l) => l.hydrated).sort((a, b) => a - b);
  const response = loads.map((l) => l.responseEnd).sort((a, b) => a - b);
  console.log(
    `sessions page in Chromium, 3,000 sessions (1 streaming): time to interactive median ${
      pct(tti, 0.5).toFixed(0)
    } ms ` +
      `(HTML received ${pct(response, 0.5).toFixed(0)} ms, hydrated ${pct(hydrated, 0.5).toFixed(0)} ms, ` +
      `${loads.at(-1)!.longTasks} long tasks) (goal < ${TTI_GOAL_MS} ms) ${
        pct(tti, 0.5) < TTI_GOAL_MS ? "OK" : "OVER GOAL"
      }`,
  );
  keys.sort((a, b) => a - b);
  console.log(
    `  filter keystroke to next frame: median ${pct(keys, 0.5).toFixed(0)} ms, max ${
      keys.at(-1)!.toFixed(0)
    } ms ` +
      `over ${keys.length} keys (goal < ${KEY_GOAL_MS} ms) ${
        keys.at(-1)! < KEY_GOAL_MS ? "OK" : "OVER GOAL"
      }`,
  );
} finally {
  clearInterval(stream);
  await browser.close();
  for (const a of agents) await a.close();
  await daemon.stop();
}
