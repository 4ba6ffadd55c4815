/**
 * Diagnosis for bench/scale.ts (not part of `deno task bench`): the same load (N sessions, 10 working, 5
 * browsers, separate processes) against a daemon under the inspector. Prints the daemon's event-loop stalls
 * (a 1 ms timer inside it that notes every late tick), the busy spells of a CPU profile with what filled them,
 * the time in GC, and the top self times; writes the profile to a file for DevTools.
 * Run: `deno run -A bench/profile_scale.ts [n=3000] [out.cpuprofile]`.
 */
import {
  busySpells,
  type CpuProfile,
  instrumentDaemon,
  selfTimes,
  startInspectedDaemon,
} from "./_inspect.ts";
import { cpuMs, machineBusyMs, pct } from "../testing/proc.ts";

const N = Number(Deno.args[0] ?? 3000);
const OUT = Deno.args[1] ?? `/tmp/lvmh-scale-${N}.cpuprofile`;
const WINDOW_MS = 6000;
const here = (name: string) => new URL(name, import.meta.url).pathname;

await using d = await startInspectedDaemon();
await instrumentDaemon(d.cdp);
const agents = new Deno.Command(Deno.execPath(), {
  args: ["run", "-A", here("_scale_agents.ts"), d.agentUrl, d.token, String(N), "10", "200"],
  stdin: "piped",
  stdout: "piped",
  stderr: "inherit",
}).spawn();
const lines = agents.stdout.pipeThrough(new TextDecoderStream()).getReader();
for (let out = ""; !out.includes("ready");) {
  const { value, done } = await lines.read();
  if (done) throw new Error("the agents process ended before it was ready");
  out += value;
}
const browsers = Array.from({ length: 5 }, (_, i) =>
  new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", here("_scale_browser.ts"), d.browserUrl, `scale-${i}`, "1500", String(WINDOW_MS)],
    stdout: "piped",
    stderr: "inherit",
  }).output());
await new Promise((r) => setTimeout(r, 1500));
await d.cdp.eval("globalThis.__on = true");

const PROFILE = Deno.env.get("NOPROF") === undefined;
await d.cdp.send("Profiler.enable");
await d.cdp.send("Profiler.setSamplingInterval", { interval: 250 });
if (PROFILE) await d.cdp.send("Profiler.start");
const wallStart = Date.now();
const cpu0 = cpuMs(d.pid), machine0 = machineBusyMs();
const results = (await Promise.all(browsers)).map((r) => JSON.parse(new TextDecoder().decode(r.stdout)));
const { profile } = PROFILE
  ? await d.cdp.send<{ profile: CpuProfile }>("Profiler.stop")
  : { profile: { nodes: [], samples: [], timeDeltas: [], startTime: 0, endTime: 0 } as CpuProfile };
const cpu = cpuMs(d.pid) - cpu0, machine = machineBusyMs() - machine0, wall = Date.now() - wallStart;
const lag = await d.cdp.eval<[number, number][]>("clearInterval(globalThis.__lagTimer), globalThis.__lag");
const hop = (await d.cdp.eval<number[]>("globalThis.__hop")).sort((a, b) => a - b);
const gap = (await d.cdp.eval<[number, number, number][]>("globalThis.__gap")).sort((a, b) => b[0] - a[0]);
const recv = (await d.cdp.eval<number[]>("globalThis.__recv")).sort((a, b) => a - b);
await agents.stdin.close();
await agents.status;
lines.releaseLock();
await agents.stdout.cancel().catch(() => {});
await Deno.writeTextFile(OUT, JSON.stringify(profile));

const delays = results.flatMap((r) => r.delays as number[]).sort((a, b) => a - b);
console.log(
  `${N} sessions: message_update p50 ${pct(delays, 0.5).toFixed(2)} ms, p99 ${
    pct(delays, 0.99).toFixed(2)
  } ms over ${delays.length} deltas (under the profiler)`,
);
console.log(
  `plugin stamp → daemon's onmessage: p50 ${pct(recv, 0.5)?.toFixed(2)} ms, p99 ${
    pct(recv, 0.99)?.toFixed(2)
  } ms, max ${recv.at(-1)?.toFixed(2)} ms over ${recv.length}`,
);
console.log(
  `plugin stamp → daemon's send to a browser: p50 ${pct(hop, 0.5).toFixed(2)} ms, p99 ${
    pct(hop, 0.99).toFixed(2)
  } ms, max ${hop.at(-1)?.toFixed(2)} ms over ${hop.length}`,
);
console.log(
  `daemon onmessage → send of the same delta: p99 ${gap[Math.floor(gap.length * 0.01)]?.[0]} ms; slowest ` +
    `[ms, deltas in the frame, events in it]: ${JSON.stringify(gap.slice(0, 8))}`,
);
console.log(
  `CPU over the window: daemon ${(cpu / wall * 100).toFixed(0)} % of one core, the whole machine ${
    (machine / wall * 100).toFixed(0)
  } % (of 200 %)`,
);
console.log(`event-loop stalls > 5 ms in the daemon during ${WINDOW_MS / 1000} s: ${lag.length}`);
for (const [at, ms] of lag.slice(0, 40)) console.log(`  +${at - wallStart} ms: ${ms} ms`);
const gcMs = selfTimes(profile, 1000).find(([f]) => f.startsWith("(garbage collector)"))?.[1] ?? 0;
console.log(`GC in the profile (V8 reports it as a pseudo-function): ${gcMs.toFixed(1)} ms`);
console.log("busy spells ≥ 3 ms in the CPU profile:");
for (const s of busySpells(profile, 3).slice(0, 25)) {
  console.log(`  at ${s.startMs.toFixed(0)} ms, ${s.ms.toFixed(1)} ms:`);
  for (const [f, ms] of s.self.slice(0, 4)) console.log(`      self ${ms.toFixed(1).padStart(5)} ${f}`);
  for (const [f, ms] of s.stacks.slice(0, 2)) console.log(`      stack ${ms.toFixed(1).padStart(5)} ${f}`);
}
console.log("top self times over the window:");
for (const [f, ms] of selfTimes(profile, 20)) console.log(`  ${ms.toFixed(1).padStart(7)} ms ${f}`);
console.log(`profile written to ${OUT}`);
