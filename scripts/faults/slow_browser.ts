/**
 * Fault row: browsers that stop reading (slow consumers). One session is flooded with large deltas and
 * followed by an ordinary browser (another process, _flood.ts) and by `slow` browsers that never read their
 * sockets (_stuck_browser.ts). The daemon must cut the stuck ones off (close 4001) with its memory bounded,
 * keep the ordinary one, and a healthy session's delta p99 at its own browser must stay under 2× the p99
 * measured just before, under the same flood.
 */
import { startDaemon } from "../../testing/daemon.ts";
import { daemonPid, pct, rssMiB } from "../../testing/proc.ts";
import { healthy } from "../../testing/healthy.ts";
import { stuckBrowser, type StuckEnd } from "./_stuck_browser.ts";

/** The hub's bound on one browser's unsent bytes (lib/hub.ts MAX_BACKLOG_BYTES), in MiB. */
const BACKLOG_MIB = 8;
/**
 * The RSS bound stated for this row: the daemon before the stuck browsers plus, for each, its backlog bound
 * and as much again for the copies the runtime keeps of what it writes.
 */
export const rssBound = (before: number, slow: number) => before + slow * 2 * BACKLOG_MIB;

export interface SlowBrowserResult {
  slow: number;
  cycles: number;
  floodMiBps: number;
  /** Stuck browsers (of slow × cycles) whose stream ended with a close frame of code 4001, and of those, hung up by the daemon. */
  cutOff: number;
  hungUp: number;
  /** What the daemon had queued for each stuck browser (kernel buffers included), largest, in MiB. */
  queuedMiB: number;
  rssBefore: number;
  rssPeak: number;
  rssAfter: number;
  bound: number;
  /** Healthy session delta p99 (ms) in each cycle, before and while the stuck browsers are there. */
  baselineP99: number[];
  duringP99: number[];
  /** The same in the next window, once they were cut off (their connections still open). */
  afterP99: number[];
  /** The median over the cycles of during / before. */
  ratio: number;
  /** The ordinary browser of the flooded session: bytes it read during the row, and whether it was closed. */
  readerMiB: number;
  readerClosed: boolean;
}

/**
 * Run the row `cycles` times: `windowMs` of baseline, then `slow` stuck browsers for `windowMs`, which are
 * then drained and closed.
 */
export async function slowBrowser(
  options: { slow: number; windowMs: number; cycles: number },
): Promise<SlowBrowserResult> {
  const deltaBytes = 32 * 1024, intervalMs = 4;
  await using d = await startDaemon();
  const pid = daemonPid(d.dataDir);
  const h = await healthy(d.agentUrl, d.browserUrl, d.token);
  const flood = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      new URL("_flood.ts", import.meta.url).pathname,
      d.agentUrl,
      d.browserUrl,
      d.token,
      "flood",
      String(deltaBytes),
      String(intervalMs),
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const lines = flood.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const stuck: Awaited<ReturnType<typeof stuckBrowser>>[] = [];
  try {
    if (!(await lines.read()).value?.includes("ready")) throw new Error("the flood process did not start");
    const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
    await pause(1000);
    h.take(); // warm-up
    const rssBefore = rssMiB(pid);
    let rssPeak = rssBefore;
    const sampler = setInterval(() => rssPeak = Math.max(rssPeak, rssMiB(pid) || 0), 50);
    // The machine is shared and one p99 is noisy: the row is repeated, each time with its own baseline.
    const baselines: number[] = [], durings: number[] = [], afters: number[] = [];
    const ends: StuckEnd[] = [];
    for (let c = 0; c < options.cycles; c++) {
      await pause(options.windowMs);
      baselines.push(pct(h.take(), 0.99));
      for (let i = 0; i < options.slow; i++) stuck.push(await stuckBrowser(d.browserUrl, "flood"));
      await pause(options.windowMs);
      durings.push(pct(h.take(), 0.99));
      await pause(options.windowMs); // cut off by now, their sockets still open: what do they cost?
      afters.push(pct(h.take(), 0.99));
      // Deno cannot end a server WebSocket's TCP connection before the peer answers the close
      // (denoland/deno#25126): a browser that never reads again keeps it, so the drain looks for the close frame.
      ends.push(...await Promise.all(stuck.map((s) => s.drain(5000))));
      for (const s of stuck.splice(0)) s.close();
      h.take(); // the drains are not part of either window
    }
    clearInterval(sampler);
    await pause(1000);
    const rssAfter = rssMiB(pid);
    await flood.stdin.close();
    const report = JSON.parse((await lines.read()).value ?? "{}");
    const ratios = durings.map((x, i) => x / baselines[i]);
    const mid = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    return {
      slow: options.slow,
      cycles: options.cycles,
      floodMiBps: deltaBytes / intervalMs * 1000 / (1 << 20),
      cutOff: ends.filter((e) => e.closeCode === 4001).length,
      hungUp: ends.filter((e) => e.closeCode === 4001 && e.eof).length,
      queuedMiB: Math.max(...ends.map((e) => e.bytes)) / (1 << 20),
      rssBefore,
      rssPeak,
      rssAfter,
      bound: rssBound(rssBefore, options.slow),
      baselineP99: baselines,
      duringP99: durings,
      afterP99: afters,
      ratio: mid(ratios),
      readerMiB: report.received / (1 << 20),
      readerClosed: report.readerClosed,
    };
  } finally {
    for (const s of stuck) s.close();
    await flood.stdin.close().catch(() => {});
    lines.releaseLock();
    await flood.stdout.cancel().catch(() => {});
    await flood.status;
    await h.stop();
  }
}
