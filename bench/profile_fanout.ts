/**
 * Diagnosis for the fan-out figure of bench/daemon.ts (not part of `deno task bench`): one plugin streaming
 * deltas to 20 browsers against a daemon under the inspector, each delay split at the daemon's onmessage and
 * its send, with the daemon's event-loop stalls: first with the plugin and the 20 browsers in this one process,
 * then with them in independent processes (bench/fanout.ts's load: the plugin alone, the browsers in 4 of 5).
 * The inspector itself adds to the daemon's part: Deno reports every WebSocket frame to an attached inspector.
 * Run: `deno run -A bench/profile_fanout.ts`.
 */
import { instrumentDaemon, startInspectedDaemon } from "./_inspect.ts";
import { fanOutLoad } from "./daemon.ts";
import { independentLoad, PROCESSES, WATCHERS } from "./fanout.ts";
import { pct } from "../testing/proc.ts";

const f = (xs: number[]) => `p50 ${pct(xs, 0.5).toFixed(2)} ms, p99 ${pct(xs, 0.99).toFixed(2)} ms`;
for (const where of ["one process", "independent processes"]) {
  await using d = await startInspectedDaemon();
  await instrumentDaemon(d.cdp);
  await d.cdp.eval("globalThis.__on = true");
  const delays = where === "one process"
    ? await fanOutLoad(d)
    : (await independentLoad(d, PROCESSES, WATCHERS / PROCESSES)).delays;
  const probe = async (name: string) =>
    (await d.cdp.eval<number[]>(`globalThis.${name}`)).sort((a, b) => a - b);
  const recv = await probe("__recv"), hop = await probe("__hop");
  const lag = await d.cdp.eval<[number, number][]>("globalThis.__lag");
  console.log(`${where}: at the browsers: ${f(delays)} over ${delays.length}`);
  console.log(`  stamp → daemon onmessage: ${f(recv)}; stamp → daemon send (each of 20): ${f(hop)}`);
  console.log(
    `  daemon event-loop stalls > 5 ms: ${lag.length}, worst ${Math.max(0, ...lag.map((l) => l[1]))} ms`,
  );
}
