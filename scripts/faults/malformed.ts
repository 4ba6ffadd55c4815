/**
 * Fault row: malformed frames from another process (bench-like, on loopback) while a healthy session streams
 * deltas to a browser. The daemon must stay up, its RSS must stay under a stated bound, and the healthy
 * session's `message_update` delay p99 during the attack must stay under 2× the baseline measured just before.
 */
import { startDaemon } from "../../testing/daemon.ts";
import { daemonPid, lineReader, pct, rssMiB } from "../../testing/proc.ts";
import { healthy } from "../../testing/healthy.ts";
import { startAttacker } from "../../testing/attacker.ts";

/** The RSS bound stated for this row: the daemon's own baseline plus room for a few 10 MB frames in flight. */
export const RSS_BOUND_MIB = 300;

export interface MalformedResult {
  frames: number;
  rounds: number;
  closes: number;
  alive: boolean;
  rssBefore: number;
  rssPeak: number;
  baselineP99: number;
  duringP99: number;
  /** Deltas the p99s are taken over, all rounds together. */
  baselineSamples: number;
  duringSamples: number;
}

/** The quiet window before each attack. */
const BASELINE_MS = 2000;

/**
 * Run the row: `rounds` attacks of `frames` bad frames each, on one daemon. A 10,000-frame attack lasts under a
 * second, so one round's p99 is its 2nd–6th worst delay, decided by any hiccup of these 2 cores; the p99 is
 * taken over the deltas of every round, during the attacks and in the quiet window before each.
 * @param options.atSink true: the attacker's frames go to `_sink.ts`, a process that drops them, while the
 *   healthy session still streams through the daemon: the machine's contention alone, as a reference
 */
export async function malformed(
  frames: number,
  options: { atSink?: boolean; rounds?: number } = {},
): Promise<MalformedResult> {
  const rounds = options.rounds ?? 1;
  await using d = await startDaemon();
  const pid = daemonPid(d.dataDir);
  const h = await healthy(d.agentUrl, d.browserUrl, d.token);
  const sink = options.atSink ? await startSink() : null;
  const target = sink
    ? { agentUrl: `${sink.url}/agent/ws`, browserUrl: `${sink.url}/ws` }
    : { agentUrl: d.agentUrl, browserUrl: d.browserUrl };
  const baseline: number[] = [], during: number[] = [];
  let closes = 0, rssBefore = 0, rssPeak = 0;
  try {
    for (let round = 0; round < rounds; round++) {
      const attacker = await startAttacker(target.agentUrl, target.browserUrl, d.token, frames);
      // The quiet window starts once every process is up: the attacker's own start is in neither window.
      h.take();
      await new Promise((r) => setTimeout(r, BASELINE_MS));
      baseline.push(...h.take());
      if (round === 0) rssBefore = rssPeak = rssMiB(pid);
      const sampler = setInterval(() => rssPeak = Math.max(rssPeak, rssMiB(pid) || 0), 50);
      closes += (await attacker.go()).closes;
      clearInterval(sampler);
      during.push(...h.take());
    }
    const res = await d.api("/api/sessions");
    await res.body?.cancel();
    baseline.sort((a, b) => a - b);
    during.sort((a, b) => a - b);
    return {
      frames,
      rounds,
      closes,
      alive: res.status === 200,
      rssBefore,
      rssPeak,
      baselineP99: pct(baseline, 0.99),
      duringP99: pct(during, 0.99),
      baselineSamples: baseline.length,
      duringSamples: during.length,
    };
  } finally {
    await h.stop();
    await sink?.stop();
  }
}

/** Start `_sink.ts` and wait for its URL. */
async function startSink(): Promise<{ url: string; stop(): Promise<void> }> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("_sink.ts", import.meta.url).pathname],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const line = lineReader(child.stdout);
  const url = await line();
  if (url === null) throw new Error("the sink process ended before it listened");
  return {
    url: url.trim(),
    async stop() {
      child.kill("SIGKILL");
      await child.status;
      while (await line() !== null) { /* to the end of its output */ }
    },
  };
}
