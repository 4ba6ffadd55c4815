/**
 * Scale benchmark (issue 14): N plugin sessions connected, 10 of them working (a run every 200 ms), 5 browsers
 * each following one working session. Every client is its own process on loopback (bench/_scale_agents.ts,
 * bench/_scale_browser.ts), so the figures are what a browser sees from outside the daemon: per-browser
 * traffic and the `message_update` delay p99, at 100, 1,000 and 3,000 sessions, in one run.
 * Run: `deno run -A bench/scale.ts [n…]`.
 */
import { startDaemon } from "../testing/daemon.ts";
import { cpuMs, daemonPid, machineBusyMs, pct, rssMiB } from "../testing/proc.ts";

const WORKING = Number(Deno.env.get("WORKING") ?? 10);
const INTERVAL_MS = 200;
const BROWSERS = 5;
const WARMUP_MS = 1500;
const WINDOW_MS = 6000;
const GOAL_KIB_S = 50;
const GOAL_P99_MS = 5;
const here = (name: string) => new URL(name, import.meta.url).pathname;

/** One row of the table: traffic and delay of each browser, with N sessions connected. */
export async function scaleRow(n: number) {
  await using d = await startDaemon();
  const agents = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      here("_scale_agents.ts"),
      d.agentUrl,
      d.token,
      String(n),
      String(WORKING),
      String(INTERVAL_MS),
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const lines = agents.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  while (!out.includes("ready")) {
    const { value, done } = await lines.read();
    if (done) throw new Error("the agents process ended before it was ready");
    out += value;
  }
  const browsers = Array.from({ length: BROWSERS }, (_, i) =>
    new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        here("_scale_browser.ts"),
        d.browserUrl,
        `scale-${i}`,
        String(WARMUP_MS),
        String(WINDOW_MS),
      ],
      stdout: "piped",
      stderr: "inherit",
    }).output());
  // CPU of the daemon and of the whole machine over the same span: a late delta on a machine whose two cores
  // are busy with other work is the scheduler's, not the daemon's (bench/profile_scale.ts splits it further).
  const pid = daemonPid(d.dataDir);
  const cpu0 = cpuMs(pid), machine0 = machineBusyMs(), t0 = performance.now();
  const done = await Promise.all(browsers);
  const wall = performance.now() - t0;
  const daemonCpu = ((cpuMs(pid) - cpu0) / wall) * 100,
    machineCpu = ((machineBusyMs() - machine0) / wall) * 100;
  const results = done.map((r) => {
    if (r.code !== 0) throw new Error("a browser process failed");
    return JSON.parse(new TextDecoder().decode(r.stdout)) as { bytesPerSec: number; delays: number[] };
  });
  const rss = rssMiB(pid);
  await agents.stdin.close();
  await agents.status;
  lines.releaseLock();
  await agents.stdout.cancel().catch(() => {});
  const delays = results.flatMap((r) => r.delays).sort((a, b) => a - b);
  if (delays.length === 0) throw new Error("no message_update reached a browser");
  const traffic = results.map((r) => r.bytesPerSec / 1024);
  return {
    n,
    kibPerSec: Math.max(...traffic),
    meanKibPerSec: traffic.reduce((a, b) => a + b, 0) / traffic.length,
    p50: pct(delays, 0.5),
    p99: pct(delays, 0.99),
    deltas: delays.length,
    rss,
    daemonCpu,
    machineCpu,
  };
}

if (import.meta.main) {
  const counts = Deno.args.length ? Deno.args.map(Number) : [100, 1000, 3000];
  const rows = [];
  for (const n of counts) rows.push(await scaleRow(n));
  console.log(
    `scale: ${WORKING} sessions working (a run every ${INTERVAL_MS} ms), ${BROWSERS} browsers each ` +
      `following one, separate processes on loopback, ${WINDOW_MS / 1000} s window`,
  );
  const base = rows.find((r) => r.n === counts[0])!;
  for (const r of rows) {
    const last = r.n === Math.max(...counts);
    const verdict = last
      ? ` (goal < ${GOAL_KIB_S} KiB/s and p99 < ${GOAL_P99_MS} ms: ${
        r.kibPerSec < GOAL_KIB_S && r.p99 < GOAL_P99_MS ? "met" : "NOT met"
      })`
      : "";
    console.log(
      `  ${r.n.toLocaleString("en").padStart(6)} sessions: per-browser ${r.kibPerSec.toFixed(1)} KiB/s ` +
        `(mean ${r.meanKibPerSec.toFixed(1)}), message_update p50 ${r.p50.toFixed(2)} ms p99 ` +
        `${r.p99.toFixed(2)} ms over ${r.deltas} deltas, daemon RSS ${r.rss.toFixed(0)} MiB, daemon CPU ` +
        `${r.daemonCpu.toFixed(0)} % of a core, machine ${r.machineCpu.toFixed(0)} % of 200 %${verdict}`,
    );
  }
  console.log(
    `  reference in this run, ${base.n} sessions: ${base.kibPerSec.toFixed(1)} KiB/s, p99 ${
      base.p99.toFixed(2)
    } ms` +
      ` (the protocol's reference: 156 KiB/s and 15 ms at 100, 5.3 MiB/s and 83 ms at 3,000)`,
  );
}
