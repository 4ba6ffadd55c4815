/**
 * Profiling aid for bench/ui_history.ts (run by hand): scrolls back as the bench does and prints Chromium's
 * long-animation-frame entries (over 33 ms): script time by invoker, forced layout inside scripts, and the
 * frame's own style/layout and paint, with no tracing overhead. Env: ROUNDS, SECS (of scrolling), LOAF_MIN (ms),
 * CSS (appended to the stylesheet, to try a layout). Performance marks `sv-render` / `sv-commit` / `pin-start` /
 * `pin-end`, when put in SessionView and use_scroll_pin by hand, are turned into render and anchor times.
 * Args: dataDir sessionId (a filled data dir, as bench/ui_history.ts makes; run with a throwaway --lock).
 */
import { startDaemon } from "../testing/daemon.ts";
import { launchBrowser, openPage } from "../testing/chromium.ts";

const [dataDir, id] = Deno.args;
const daemon = await startDaemon({ dataDir });
const browser = await launchBrowser();
try {
  for (let round = 0; round < Number(Deno.env.get("ROUNDS") ?? 1); round++) {
    const { page, context } = await openPage(browser, daemon, { signIn: true });
    const css = Deno.env.get("CSS");
    if (css) {
      await page.route("**/static/style.css", async (r) => {
        const res = await r.fetch();
        await r.fulfill({ response: res, body: (await res.text()) + "\n" + css });
      });
    }
    await page.goto(`${daemon.url}/sessions/${id}`);
    await page.waitForSelector("html[data-hydrated='1']");
    await page.waitForTimeout(1500);
    const out = await page.evaluate(async (SECS: number) => {
      // deno-lint-ignore no-explicit-any
      const loafs: any[] = [];
      const po = new PerformanceObserver((l) => loafs.push(...l.getEntries().map((e) => e.toJSON())));
      po.observe({ type: "long-animation-frame" });
      const frames: number[] = [];
      const list = document.querySelector("main.conversation")!;
      const grewAt: number[] = [];
      let added = false;
      new MutationObserver(() => added = true).observe(list, { childList: true, subtree: true });
      const start = performance.now();
      let last = start;
      await new Promise<void>((done) => {
        const step = (now: number) => {
          frames.push(now - last);
          if (added) grewAt.push(now);
          added = false;
          last = now;
          scrollBy(0, -120);
          if (now - start < Number(SECS) * 1000) requestAnimationFrame(step);
          else done();
        };
        requestAnimationFrame(step);
      });
      await new Promise((r) => setTimeout(r, 100));
      po.disconnect();
      const marks = performance.getEntriesByType("mark").filter((m) => m.startTime > start)
        .map((m) => [m.name, m.startTime] as [string, number]);
      return { frames: frames.slice(1), loafs, grewAt, start, marks };
    }, Number(Deno.env.get("SECS") ?? 8));
    const slow = out.frames.filter((f) => f > 1000 / 30);
    console.log(
      `${out.frames.length} frames, ${slow.length} over 33 ms: ${slow.map((f) => f.toFixed(0)).join(", ")}`,
    );
    console.log(`grew at ${out.grewAt.map((t) => (t - out.start).toFixed(0)).join(", ")}`);
    {
      // Each prepend: SessionView render start -> scroll pin layout effect (render + commit) -> its end (layout).
      const rows: string[] = [];
      let sv = NaN, pin = NaN;
      for (const [n, t] of out.marks) {
        if (n === "sv-render") sv = t;
        if (n === "pin-start") pin = t;
        if (n === "pin-end") {
          rows.push(`render ${(pin - sv).toFixed(1)} + anchor ${(t - pin).toFixed(1)}`);
        }
      }
      console.log(`prepends: ${rows.join(" | ")}`);
      const renders: string[] = [];
      let r0 = NaN, anchored = false;
      for (const [n, t] of out.marks) {
        if (n === "sv-render") (r0 = t, anchored = false);
        if (n === "pin-end") anchored = true;
        if (n === "sv-commit") renders.push(`${(t - r0).toFixed(1)}${anchored ? "P" : ""}`);
      }
      console.log(`renders (P: a prepend): ${renders.join(" ")}`);
    }
    for (const l of out.loafs) {
      if (l.duration < Number(Deno.env.get("LOAF_MIN") ?? 30)) continue;
      const end = l.startTime + l.duration;
      const scripts = l.scripts.map((s: Record<string, number | string>) =>
        `${s.invoker}${s.sourceFunctionName ? `/${s.sourceFunctionName}` : ""} ${
          Number(s.duration).toFixed(0)
        }` +
        (Number(s.forcedStyleAndLayoutDuration)
          ? ` (forced layout ${Number(s.forcedStyleAndLayoutDuration).toFixed(0)})`
          : "")
      ).join("; ");
      console.log(
        `  loaf at ${(l.startTime - out.start).toFixed(0)} ${l.duration.toFixed(0)} ms: render ${
          (end - l.renderStart).toFixed(0)
        } (style+layout ${(end - l.styleAndLayoutStart).toFixed(0)}), blocking ${
          l.blockingDuration.toFixed(0)
        }; ${scripts}`,
      );
    }
    await context.close();
  }
} finally {
  await browser.close();
  await daemon.stop();
}
