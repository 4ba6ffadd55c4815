/**
 * Test helper for the UI tests: Debian's Chromium driven by playwright-core (installed by
 * `scripts/setup_chromium.sh` when missing), the island bundle built before the daemon starts, and page
 * helpers that fail the test on any script error or CSP violation.
 */
// A full, exact specifier instead of the import map, and kept out of deno.lock (tests run against a copy of
// it, see scripts/test.sh): Deno installs everything the lock lists, so `deno task start` would fetch it too.
import { type Browser, type BrowserContext, chromium, type Page } from "npm:playwright-core@1.65.1";
import { fileURLToPath } from "node:url";
import { ensureBundle } from "../lib/bundle.ts";
import { type Daemon, waitFor } from "./daemon.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const CHROMIUM = "/usr/bin/chromium";
export const ARTIFACTS = `${ROOT}test-artifacts`;

/** Chromium flags for this machine's closed network (no background connections, no sandbox as root). */
const ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

/** Install Chromium if needed, build the bundle if stale, and launch a headless browser (own temp profile). */
export async function launchBrowser(): Promise<Browser> {
  if (!await exists(CHROMIUM)) {
    const { code } = await new Deno.Command("sh", { args: [`${ROOT}scripts/setup_chromium.sh`] }).output();
    if (code !== 0) throw new Error("Cannot install chromium: scripts/setup_chromium.sh failed");
  }
  await ensureBundle();
  await Deno.mkdir(ARTIFACTS, { recursive: true });
  return await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
}

export interface UiPage {
  page: Page;
  context: BrowserContext;
  /** Script errors, console errors and CSP reports seen so far. */
  problems: string[];
  close(): Promise<void>;
}

/**
 * Open a page in a new context; with `signIn`, the context first signs in through `POST /login` (cookie) and
 * holds the token in localStorage, like a browser that signed in earlier.
 */
export async function openPage(
  browser: Browser,
  daemon: Daemon,
  opts: { signIn?: boolean; viewport?: { width: number; height: number }; colorScheme?: "light" | "dark" } =
    {},
): Promise<UiPage> {
  const context = await browser.newContext({
    viewport: opts.viewport ?? { width: 1280, height: 860 },
    colorScheme: opts.colorScheme ?? "light",
  });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error") problems.push(`console: ${m.text()}`);
  });
  page.on("dialog", (d) => {
    problems.push(`dialog: ${d.message()}`);
    void d.dismiss();
  });
  if (opts.signIn) {
    const res = await context.request.post(`${daemon.url}/login`, {
      data: { token: daemon.token },
      headers: { origin: daemon.url },
    });
    if (!res.ok()) throw new Error(`sign-in failed: ${res.status()}`);
    await context.addInitScript((token: string) => localStorage.setItem("lvmh.token", token), daemon.token);
  }
  return { page, context, problems, close: () => context.close() };
}

/** Load a path and wait for the island loader's deterministic marker. */
export async function gotoHydrated(ui: UiPage, daemon: Daemon, path: string): Promise<void> {
  await ui.page.goto(`${daemon.url}${path}`);
  await ui.page.waitForSelector("html[data-hydrated='1']", { timeout: 10_000 });
}

/** Save a full-page screenshot under test-artifacts/. */
export async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: `${ARTIFACTS}/${name}.png`, fullPage: false });
}

/**
 * Scroll a session page to the top until its loader says nothing older is left.
 * @returns the seqs of the conversation's items, in page order
 */
export async function loadAllOlder(page: Page, timeoutMs = 20_000): Promise<number[]> {
  await waitFor(
    async () => {
      await page.evaluate(() => scrollTo(0, 0));
      return await page.locator(".history-top button").count() === 0;
    },
    "all older pages",
    timeoutMs,
  );
  return await page.locator(".conversation [data-seq]").evaluateAll((els) =>
    els.map((e) => Number(e.getAttribute("data-seq")))
  );
}
