/**
 * In-page timing for the Chromium benches (bench/_render_list_browser.ts, bench/ui_history.ts): an init script
 * that notes when the island loader marks the page hydrated, every long task (> 50 ms) and every `input`
 * event's time to the next frame, and a reader of those figures.
 */
import type { Page } from "npm:playwright-core@1.65.1";

interface BenchState {
  hydratedAt: number | null;
  longTasks: [number, number][];
  inputs: number[];
}
/** Install the timing script; it runs before any of the page's own scripts. */
export async function installTiming(page: Page): Promise<void> {
  await page.addInitScript(() => {
    const b: BenchState = { hydratedAt: null, longTasks: [], inputs: [] };
    (globalThis as unknown as { __bench: BenchState }).__bench = b;
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) b.longTasks.push([e.startTime, e.startTime + e.duration]);
    }).observe({ type: "longtask", buffered: true });
    const mo = new MutationObserver(() => {
      if (document.documentElement.hasAttribute("data-hydrated")) {
        b.hydratedAt = performance.now();
        mo.disconnect();
      }
    });
    // The document element may not exist yet when this runs: watch the whole document for the attribute.
    mo.observe(document, { attributes: true, subtree: true, attributeFilter: ["data-hydrated"] });
    // Capture phase: before the island's own handler, so the time covers its render and the next frame.
    addEventListener("input", () => {
      const t0 = performance.now();
      requestAnimationFrame(() => setTimeout(() => b.inputs.push(performance.now() - t0), 0));
    }, true);
  });
}

/** What the page measured, times from navigation start (ms). */
export interface PageTiming {
  responseEnd: number;
  domContentLoaded: number;
  hydrated: number;
  /** When the main thread went quiet after hydration: the end of the last long task, or hydration. */
  interactive: number;
  longTasks: number;
  inputs: number[];
}

/**
 * Wait until the page is hydrated and its main thread has had no long task for `quietMs`, then read the figures.
 */
export async function readTiming(page: Page, quietMs = 1000, timeoutMs = 30_000): Promise<PageTiming> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const t = await page.evaluate(() => {
      const b = (globalThis as unknown as { __bench: BenchState }).__bench;
      const nav = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming;
      const lastEnd = b.longTasks.reduce((m, [, end]) => Math.max(m, end), 0);
      return {
        now: performance.now(),
        responseEnd: nav.responseEnd,
        domContentLoaded: nav.domContentLoadedEventEnd,
        hydrated: b.hydratedAt ?? -1,
        interactive: Math.max(b.hydratedAt ?? 0, lastEnd),
        longTasks: b.longTasks.length,
        inputs: [...b.inputs],
      };
    });
    if (t.hydrated >= 0 && t.now - t.interactive >= quietMs) {
      const { now: _now, ...timing } = t;
      return timing;
    }
    if (Date.now() > deadline) {
      const recent = await page.evaluate(() =>
        (globalThis as unknown as { __bench: BenchState }).__bench.longTasks.slice(-5).map(([a, b]) =>
          Math.round(b - a)
        )
      );
      throw new Error(
        `the page never went quiet: ${
          JSON.stringify({ ...t, inputs: t.inputs.length })
        }, last long tasks (ms) ${recent}`,
      );
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
