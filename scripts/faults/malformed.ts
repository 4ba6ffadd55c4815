/**
 * Fault row: malformed frames from another process (bench-like, on loopback) while a healthy session streams
 * deltas to a browser. The daemon must stay up, its RSS must stay under a stated bound, and the healthy
 * session's `message_update` delay p99 during the attack must stay under 2× the baseline measured just before.
 */
import { startDaemon } from "../../tests/_daemon.ts";
import { daemonPid, pct, rssMiB } from "../../bench/_proc.ts";
import { healthy } from "./_healthy.ts";

/** The RSS bound stated for this row: the daemon's own baseline plus room for a few 10 MB frames in flight. */
export const RSS_BOUND_MIB = 300;

export interface MalformedResult {
  frames: number;
  closes: number;
  alive: boolean;
  rssBefore: number;
  rssPeak: number;
  baselineP99: number;
  duringP99: number;
}

/**
 * Run the row with `frames` bad frames.
 * @param options.atSink true: the attacker's frames go to `_sink.ts`, a process that drops them, while the
 *   healthy session still streams through the daemon: the machine's contention alone, as a reference
 */
export async function malformed(
  frames: number,
  options: { atSink?: boolean } = {},
): Promise<MalformedResult> {
  await using d = await startDaemon();
  const pid = daemonPid(d.dataDir);
  const h = await healthy(d.agentUrl, d.browserUrl, d.token);
  const sink = options.atSink ? await startSink() : null;
  const target = sink
    ? { agentUrl: `${sink.url}/agent/ws`, browserUrl: `${sink.url}/ws` }
    : { agentUrl: d.agentUrl, browserUrl: d.browserUrl };
  try {
    await new Promise((r) => setTimeout(r, 2000));
    const baseline = h.take();
    const rssBefore = rssMiB(pid);
    let rssPeak = rssBefore;
    const sampler = setInterval(() => rssPeak = Math.max(rssPeak, rssMiB(pid) || 0), 50);
    const attacker = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        new URL("_attacker.ts", import.meta.url).pathname,
        target.agentUrl,
        target.browserUrl,
        d.token,
        String(frames),
      ],
      stdout: "piped",
      stderr: "inherit",
    }).output();
    clearInterval(sampler);
    const during = h.take();
    if (attacker.code !== 0) throw new Error("the attacker process failed");
    const { closes } = JSON.parse(new TextDecoder().decode(attacker.stdout));
    const res = await d.api("/api/sessions");
    await res.body?.cancel();
    return {
      frames,
      closes,
      alive: res.status === 200,
      rssBefore,
      rssPeak,
      baselineP99: pct(baseline, 0.99),
      duringP99: pct(during, 0.99),
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
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  while (!out.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("the sink process ended before it listened");
    out += value;
  }
  reader.releaseLock();
  return {
    url: out.split("\n")[0].trim(),
    async stop() {
      child.kill("SIGKILL");
      await child.status;
      await child.stdout.cancel().catch(() => {});
    },
  };
}
