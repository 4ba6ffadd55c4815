/**
 * Diagnosis for the ingest figure of bench/daemon.ts (not part of `deno task bench`): the same load (50
 * sockets × 2,000 events in batch frames) against a daemon under the inspector, with a CPU profile of the
 * daemon meanwhile. Prints the top self times and the daemon's CPU, writes the profile for DevTools.
 * Run: `deno run -A bench/profile_ingest.ts [out.cpuprofile]`.
 */
import { type CpuProfile, selfTimes, startInspectedDaemon } from "./_inspect.ts";
import { ingestLoad } from "./daemon.ts";
import { bearerFetch } from "../testing/daemon.ts";
import { cpuMs } from "../testing/proc.ts";

const OUT = Deno.args[0] ?? "/tmp/lvmh-ingest.cpuprofile";
await using d = await startInspectedDaemon();
const api = bearerFetch(d.url, d.token);
let cpu0 = 0;
const t0 = { at: 0 };
const rate = await ingestLoad({ agentUrl: d.agentUrl, token: d.token, api }, async () => {
  await d.cdp.send("Profiler.enable");
  await d.cdp.send("Profiler.setSamplingInterval", { interval: 100 });
  await d.cdp.send("Profiler.start");
  cpu0 = cpuMs(d.pid);
  t0.at = performance.now();
});
const cpu = cpuMs(d.pid) - cpu0, wall = performance.now() - t0.at;
const { profile } = await d.cdp.send<{ profile: CpuProfile }>("Profiler.stop");
await Deno.writeTextFile(OUT, JSON.stringify(profile));
console.log(
  `ingest under the profiler: ${Math.round(rate).toLocaleString("en")} events/s; daemon CPU ${
    (cpu / wall * 100).toFixed(0)
  } % of a core (all its threads) over ${wall.toFixed(0)} ms`,
);
const top = selfTimes(profile, 40);
const total = selfTimes(profile, 100000).reduce((a, [, ms]) => a + ms, 0);
for (const [f, ms] of top) {
  console.log(`  ${ms.toFixed(1).padStart(7)} ms ${(ms / total * 100).toFixed(1).padStart(5)} % ${f}`);
}
console.log(`profile written to ${OUT}`);
