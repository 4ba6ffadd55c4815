/**
 * Diagnosis for the malformed-frames fault row (scripts/faults/malformed.ts; not part of `deno task bench`): the
 * same attack (10,000 bad frames from another process, half per socket kind) against a daemon under the
 * inspector while a healthy session streams, with a CPU profile of the daemon during the attack. Prints the
 * healthy session's delta p99 before and during, the daemon's CPU, and the top self times.
 * Run: `deno run -A bench/profile_malformed.ts [frames=10000] [out.cpuprofile]`.
 */
import { type CpuProfile, instrumentDaemon, selfTimes, startInspectedDaemon } from "./_inspect.ts";
import { healthy } from "../testing/healthy.ts";
import { cpuMs, pct } from "../testing/proc.ts";
import { startAttacker } from "../testing/attacker.ts";

const FRAMES = Number(Deno.args[0] ?? 10_000);
const OUT = Deno.args[1] ?? "/tmp/lvmh-malformed.cpuprofile";
await using d = await startInspectedDaemon();
await instrumentDaemon(d.cdp);
const h = await healthy(d.agentUrl, d.browserUrl, d.token);
const attack = await startAttacker(d.agentUrl, d.browserUrl, d.token, FRAMES);
h.take(); // the attacker's start is in neither window
await new Promise((r) => setTimeout(r, 2000));
const baseline = h.take();
await d.cdp.eval("globalThis.__on = true");
await d.cdp.send("Profiler.enable");
await d.cdp.send("Profiler.setSamplingInterval", { interval: 200 });
// The profiler's start stops the daemon ~150 ms: NOPROF=1 measures the attack without it.
const PROFILE = !Deno.env.get("NOPROF");
if (PROFILE) await d.cdp.send("Profiler.start");
const cpu0 = cpuMs(d.pid), t0 = performance.now();
const attacker = await attack.go();
const wall = performance.now() - t0, cpu = cpuMs(d.pid) - cpu0;
const during = h.take();
const probe = async (name: string) =>
  (await d.cdp.eval<number[]>(`globalThis.${name}`)).sort((a, b) => a - b);
const recv = await probe("__recv"), hop = await probe("__hop");
const lag = await d.cdp.eval<[number, number][]>("globalThis.__lag");
if (Deno.env.get("LAGS")) console.log(lag.map(([, ms]) => `${ms}`).join(" "));
const { profile } = PROFILE
  ? await d.cdp.send<{ profile: CpuProfile }>("Profiler.stop")
  : { profile: { nodes: [], samples: [], timeDeltas: [], startTime: 0, endTime: 0 } as CpuProfile };
await h.stop();
await Deno.writeTextFile(OUT, JSON.stringify(profile));
console.log(`attacker: ${JSON.stringify(attacker)} in ${wall.toFixed(0)} ms`);
console.log(
  `healthy delta p99: ${pct(baseline, 0.99).toFixed(2)} ms before, ${
    pct(during, 0.99).toFixed(2)
  } ms during (max ${during.at(-1)?.toFixed(1)} ms); daemon CPU ${(cpu / wall * 100).toFixed(0)} % of a core`,
);
console.log(
  `  of which: stamp → daemon onmessage p99 ${pct(recv, 0.99)?.toFixed(2)} ms (max ${
    recv.at(-1)?.toFixed(1)
  }), stamp → daemon send p99 ${pct(hop, 0.99)?.toFixed(2)} ms (max ${hop.at(-1)?.toFixed(1)}); ` +
    `daemon event-loop stalls > 5 ms: ${lag.length}, worst ${
      Math.max(0, ...lag.map((l) => l[1])).toFixed(0)
    } ms`,
);
for (const [f, ms] of selfTimes(profile, 25)) console.log(`  ${ms.toFixed(1).padStart(7)} ms ${f}`);
console.log(`profile written to ${OUT}`);
const log = d.output();
console.log(`daemon log: ${log.split("\n").length} lines, ${log.length} bytes`);
