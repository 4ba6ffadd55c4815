/**
 * Diagnosis for the RSS figure of bench/daemon.ts (not part of `deno task bench`): the ingest load against a
 * daemon under the inspector, then where its memory is: RSS from /proc, V8's heap (used and total), external
 * and ArrayBuffer memory, SQLite's own figures, and a heap snapshot summarised by constructor.
 * Run: `deno run -A bench/profile_memory.ts [out.heapsnapshot]`.
 */
import { startInspectedDaemon } from "./_inspect.ts";
import { ingestLoad } from "./daemon.ts";
import { bearerFetch } from "../testing/daemon.ts";
import { rssMiB } from "../testing/proc.ts";

const OUT = Deno.args[0] ?? "/tmp/lvmh-ingest.heapsnapshot";
await using d = await startInspectedDaemon({
  env: Object.fromEntries(
    Object.entries(Deno.env.toObject()).filter(([k]) => k.startsWith("MALLOC_") || k === "DENO_V8_FLAGS"),
  ),
});
const api = bearerFetch(d.url, d.token);
const mem = async (when: string) => {
  const m = await d.cdp.eval<Record<string, number>>("Deno.memoryUsage()");
  const mib = (n: number) => (n / 1048576).toFixed(0);
  const smaps = Deno.readTextFileSync(`/proc/${d.pid}/smaps_rollup`);
  const anon = Number(/Anonymous:\s+(\d+)/.exec(smaps)?.[1] ?? 0) / 1024;
  const file = Number(/Rss:\s+(\d+)/.exec(smaps)?.[1] ?? 0) / 1024 - anon;
  console.log(
    `${when}: RSS ${rssMiB(d.pid).toFixed(0)} MiB (anonymous ${anon.toFixed(0)}, file-backed ${
      file.toFixed(0)
    }); V8 heap used ${mib(m.heapUsed)} of ${mib(m.heapTotal)} MiB, external ${mib(m.external)} MiB`,
  );
};
await mem("before the load");
const rate = await ingestLoad({ agentUrl: d.agentUrl, token: d.token, api });
console.log(`ingest ${Math.round(rate).toLocaleString("en")} events/s`);
await mem("after the load");
await d.cdp.send("HeapProfiler.enable");
await d.cdp.send("HeapProfiler.collectGarbage");
await mem("after a full GC");
const snap = await d.cdp.heapSnapshot();
await Deno.writeTextFile(OUT, snap);
await mem("after the snapshot");
// Summarise the snapshot: self size by constructor name.
const s = JSON.parse(snap);
const f = s.snapshot.meta.node_fields as string[];
const types = s.snapshot.meta.node_types[0] as string[];
const [iType, iName, iSize] = ["type", "name", "self_size"].map((k) => f.indexOf(k));
const by = new Map<string, [number, number]>();
for (let i = 0; i < s.nodes.length; i += f.length) {
  const key = `${types[s.nodes[i + iType]]}:${s.strings[s.nodes[i + iName]]}`.slice(0, 80);
  const e = by.get(key) ?? [0, 0];
  e[0] += s.nodes[i + iSize];
  e[1]++;
  by.set(key, e);
}
console.log("heap snapshot, self size by type:constructor (top 15):");
for (const [k, [size, n]] of [...by].sort((a, b) => b[1][0] - a[1][0]).slice(0, 15)) {
  console.log(`  ${(size / 1048576).toFixed(1).padStart(6)} MiB ${String(n).padStart(8)} × ${k}`);
}
