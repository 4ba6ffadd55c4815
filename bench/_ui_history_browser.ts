/**
 * Browser half of bench/ui_history.ts: a real daemon on the filled data dir, real Chromium on the session's
 * page. Loads it three times (time to interactive: hydrated and no long task for a second), then scrolls up
 * 120 px per frame for a few seconds, so older pages load as the top comes into view, and reports the frame
 * rate from requestAnimationFrame timestamps, the slow frames with and without a page prepended, and how far
 * back it got. As a reference in the same run (the machine is shared), it then scrolls back down over what is
 * loaded, where nothing loads.
 * Args: dataDir sessionId
 */
import type { Page } from "npm:playwright-core@1.65.1";
import { startDaemon } from "../testing/daemon.ts";
import { launchBrowser, openPage } from "../testing/chromium.ts";
import { installTiming, readTiming } from "./_ui_timing.ts";
import { pct } from "../testing/proc.ts";

const TTI_GOAL_MS = 1000;
const FPS_GOAL = 60;
/** requestAnimationFrame runs at most at the 60 Hz frame clock: this close to it counts as the goal. */
const FPS_OK = 57;
const SCROLL_SECONDS = 8;
const [dataDir, id] = Deno.args;

interface Scroll {
  frames: number[];
  /** For each frame, whether messages were added to the DOM before it (an older page was prepended). */
  grew: boolean[];
  seconds: number;
  messages: number;
  firstSeq: number;
}

/** Scroll by `dy` px per frame for `seconds`, timing every frame. */
function scroll(page: Page, dy: number, seconds: number): Promise<Scroll> {
  return page.evaluate(async ([dy, seconds]) => {
    const frames: number[] = [];
    const grew: boolean[] = [];
    const list = document.querySelector("main.conversation")!;
    // Messages sit in blocks (a slice of older history may only extend the first one): watch the whole subtree.
    let added = false;
    const seen = new MutationObserver((records) => {
      if (
        records.some((r) =>
          [...r.addedNodes].some((n) =>
            n instanceof Element && (n.matches("[data-seq]") || n.querySelector("[data-seq]"))
          )
        )
      ) {
        added = true;
      }
    });
    seen.observe(list, { childList: true, subtree: true });
    const start = performance.now();
    let last = start;
    await new Promise<void>((done) => {
      const step = (now: number) => {
        frames.push(now - last);
        grew.push(added);
        added = false;
        last = now;
        scrollBy(0, dy);
        if (now - start < seconds * 1000) requestAnimationFrame(step);
        else done();
      };
      requestAnimationFrame(step);
    });
    seen.disconnect();
    const seqs = [...document.querySelectorAll("[data-seq]")].map((e) => Number(e.getAttribute("data-seq")));
    return {
      frames: frames.slice(1),
      grew: grew.slice(1),
      seconds: (performance.now() - start) / 1000,
      messages: document.querySelectorAll(".msg").length,
      firstSeq: seqs.length ? Math.min(...seqs) : NaN,
    };
  }, [dy, seconds]);
}

function describe(s: Scroll) {
  const fps = s.frames.length / s.seconds;
  const sorted = [...s.frames].sort((a, b) => a - b);
  const slow = s.frames.map((f, i) => f > 1000 / 30 ? i : -1).filter((i) => i >= 0);
  // Parsing the page and patching the DOM come before the change is seen, the layout and paint of the new
  // messages after it: a slow frame within two frames of the change counts as the prepend's.
  const withPage = slow.filter((i) => s.grew.slice(Math.max(0, i - 2), i + 3).some(Boolean));
  return {
    fps,
    text:
      `${fps.toFixed(0)} fps, frame p50 ${pct(sorted, 0.5).toFixed(1)} ms, p95 ${
        pct(sorted, 0.95).toFixed(1)
      } ms, ` +
      `max ${sorted.at(-1)!.toFixed(0)} ms, ${slow.length} frames over 33 ms`,
    slow: slow.length,
    withPage: withPage.map((i) => s.frames[i]),
  };
}

const daemon = await startDaemon({ dataDir });
const browser = await launchBrowser();
try {
  const tti: number[] = [];
  let up: Scroll | null = null, down: Scroll | null = null;
  let pages = 0;
  for (let n = 0; n < 3; n++) {
    const ui = await openPage(browser, daemon, { signIn: true });
    try {
      await installTiming(ui.page);
      ui.page.on("request", (r) => {
        if (r.url().includes(`/api/sessions/${id}/events`)) pages++;
      });
      await ui.page.goto(`${daemon.url}/sessions/${id}`);
      tti.push((await readTiming(ui.page)).interactive);
      if (n < 2) continue;
      pages = 0;
      up = await scroll(ui.page, -120, SCROLL_SECONDS);
      down = await scroll(ui.page, 120, SCROLL_SECONDS / 2);
      if (ui.problems.length) throw new Error(ui.problems.join("\n"));
    } finally {
      await ui.close();
    }
  }
  tti.sort((a, b) => a - b);
  const med = pct(tti, 0.5);
  console.log(
    `session page in Chromium, 100,000 stored events: time to interactive median ${med.toFixed(0)} ms ` +
      `(goal < ${TTI_GOAL_MS} ms) ${med < TTI_GOAL_MS ? "OK" : "OVER GOAL"}`,
  );
  const u = describe(up!), r = describe(down!);
  console.log(
    `  scrolling back ${up!.seconds.toFixed(1)} s: ${u.text} (goal ${FPS_GOAL} fps) ` +
      `${u.fps >= FPS_OK ? "OK" : "UNDER GOAL"}; ${pages} older pages loaded, ${
        up!.messages
      } messages in the DOM, ` +
      `back to seq ${up!.firstSeq}`,
  );
  console.log(`  reference, scrolling down over what is loaded (nothing loads): ${r.text}`);
  if (u.slow > 0) {
    console.log(
      `  slow frames while scrolling back: ${u.withPage.length} with an older page prepended (` +
        `${u.withPage.map((m) => `${m.toFixed(0)} ms`).join(", ") || "none"}), ${
          u.slow - u.withPage.length
        } ` +
        `without` + (u.fps < FPS_OK
          ? (u.withPage.length * 2 >= u.slow
            ? ": mostly the prepends — a slice's new messages rendered, and the layout after it"
            : r.slow > 0
            ? ": mostly frames without a load, as in the reference — a busy machine or the layout of the DOM"
            : ": frames without a load, which the reference does not show")
          : ""),
    );
  }
} finally {
  await browser.close();
  await daemon.stop();
}
