/**
 * Profiling aid for bench/ui_history.ts (run by hand, not part of the bench): scrolls back through the filled
 * session page as the bench does, with a Chromium trace and a V8 CPU profile running, then prints, for every
 * frame over 33 ms, where the renderer's main thread spent it (scripting, style, layout, paint, GC) and the
 * JS functions with the most self time. The page is served an unminified copy of the island bundle so the
 * profile names functions. Env: PROFILE=1 adds the V8 CPU profile, NOTRACE=1 leaves the trace out (its overhead
 * inflates every frame), SUMMARY=1 prints only the profile's totals (by component, self, inclusive).
 * Args: dataDir sessionId (a filled data dir, as bench/ui_history.ts makes; run with a throwaway --lock).
 */
import { fileURLToPath, pathToFileURL } from "node:url";
import { join } from "node:path";
import { startDaemon } from "../testing/daemon.ts";
import { launchBrowser, openPage } from "../testing/chromium.ts";
import { islandNames } from "../lib/bundle.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const [dataDir, id] = Deno.args;

async function unminifiedBundle(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-trace-build-" });
  const url = (p: string) => JSON.stringify(pathToFileURL(join(ROOT, p)).href);
  const names = await islandNames();
  const lines = [`import { boot } from ${url("client.tsx")};`];
  names.forEach((n, i) => lines.push(`import I${i} from ${url(`islands/${n}.tsx`)};`));
  lines.push(`boot({ ${names.map((n, i) => `${n}: I${i}`).join(", ")} });`);
  await Deno.writeTextFile(join(dir, "entry.tsx"), lines.join("\n") + "\n");
  const out = join(dir, "client.js");
  const { code, stderr } = await new Deno.Command(Deno.execPath(), {
    args: [
      "bundle",
      "--quiet",
      "--platform",
      "browser",
      "--config",
      join(ROOT, "deno.json"),
      "-o",
      out,
      join(dir, "entry.tsx"),
    ],
    cwd: ROOT,
    stderr: "piped",
  }).output();
  if (code !== 0) throw new Error(new TextDecoder().decode(stderr));
  const js = await Deno.readTextFile(out);
  await Deno.remove(dir, { recursive: true });
  return js;
}

interface TraceEvent {
  name: string;
  cat: string;
  ph: string;
  ts: number;
  dur?: number;
  pid: number;
  tid: number;
  args?: Record<string, unknown>;
}
interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}

const js = await unminifiedBundle();
const daemon = await startDaemon({ dataDir });
const browser = await launchBrowser();
try {
  const { page, context } = await openPage(browser, daemon, { signIn: true });
  await page.route("**/static/client.js", (r) => r.fulfill({ body: js, contentType: "text/javascript" }));
  await page.goto(`${daemon.url}/sessions/${id}`);
  await page.waitForSelector("html[data-hydrated='1']");
  await page.waitForTimeout(1500);
  const cdp = await context.newCDPSession(page);
  const events: TraceEvent[] = [];
  cdp.on("Tracing.dataCollected", (d) => events.push(...(d.value as unknown as TraceEvent[])));
  const done = new Promise<void>((r) => cdp.once("Tracing.tracingComplete", () => r()));
  await cdp.send("Profiler.enable");
  await cdp.send("Profiler.setSamplingInterval", { interval: 100 });
  const tracing = Deno.env.get("NOTRACE") !== "1";
  if (tracing) {
    await cdp.send("Tracing.start", {
      categories: "devtools.timeline,disabled-by-default-devtools.timeline,v8,blink.user_timing,toplevel",
    });
  }
  const sampling = Deno.env.get("PROFILE") === "1";
  if (sampling) await cdp.send("Profiler.start");
  const frames = await page.evaluate(async () => {
    const out: { t: number; d: number }[] = [];
    const start = performance.now();
    let last = start;
    await new Promise<void>((done) => {
      const step = (now: number) => {
        out.push({ t: now, d: now - last });
        if (now - last > 1000 / 30) performance.mark(`slow:${(now - last).toFixed(0)}`);
        last = now;
        scrollBy(0, -120);
        if (now - start < 8000) requestAnimationFrame(step);
        else done();
      };
      requestAnimationFrame(step);
    });
    return out.slice(1);
  });
  const { profile } = sampling
    ? await cdp.send("Profiler.stop") as unknown as {
      profile: { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[]; startTime: number };
    }
    : { profile: { nodes: [], samples: [], timeDeltas: [], startTime: 0 } };
  if (tracing) (await cdp.send("Tracing.end"), await done);
  const slow = frames.filter((f) => f.d > 1000 / 30);
  console.log(
    `${frames.length} frames, ${slow.length} over 33 ms: ${slow.map((f) => f.d.toFixed(0)).join(", ")}`,
  );
  // The renderer main thread: where the slow marks are.
  const marks = events.filter((e) => e.name.startsWith("slow:"));
  const { pid, tid } = marks[0] ?? { pid: 0, tid: 0 };
  const main = events.filter((e) => e.pid === pid && e.tid === tid && e.ph === "X" && e.dur !== undefined);
  const tasks = main.filter((e) => e.name === "RunTask" || e.name === "ThreadControllerImpl::RunTask");
  // Sample times (µs, tracing clock).
  const nodeById = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const sampleTs: number[] = [];
  let t = profile.startTime;
  for (const d of profile.timeDeltas) sampleTs.push(t += d);
  {
    // All JS over the scroll, by function (inclusive and self), in sampled ms.
    const self = new Map<string, number>(), incl = new Map<string, number>();
    const name = (x: ProfileNode) => `${x.callFrame.functionName || "(anon)"}:${x.callFrame.lineNumber}`;
    for (const nid of profile.samples) {
      const n = nodeById.get(nid)!;
      self.set(name(n), (self.get(name(n)) ?? 0) + 1);
      const seen = new Set<string>();
      for (let c: number | undefined = nid; c !== undefined; c = parent.get(c)) {
        const k = name(nodeById.get(c)!);
        if (!seen.has(k)) (seen.add(k), incl.set(k, (incl.get(k) ?? 0) + 1));
      }
    }
    const fmt = (m: Map<string, number>, k: number) =>
      [...m].sort((a, b) => b[1] - a[1]).slice(0, k).map(([n, c]) => `${n} ${c}`).join("\n  ");
    const comps = new Map(
      [...incl].filter(([n]) => /^[A-Z][a-z]/.test(n) || /render|shouldComponent/.test(n)),
    );
    if (sampling) console.log(`COMPONENTS:\n  ${fmt(comps, 40)}`);
    if (sampling) console.log(`ALL self:\n  ${fmt(self, 30)}\nALL incl:\n  ${fmt(incl, 60)}`);
    if (Deno.env.get("SUMMARY") === "1") Deno.exit(0);
  }
  for (const m of marks) {
    const end = m.ts;
    const begin = end - Number(m.name.slice(5)) * 1000;
    console.log(`\n== frame ${m.name.slice(5)} ms`);
    const inWin = tasks.filter((e) => e.ts + e.dur! > begin && e.ts < end && e.dur! > 2000);
    for (const task of inWin) {
      const kids = main.filter((e) => e.ts >= task.ts && e.ts + e.dur! <= task.ts + task.dur! && e !== task);
      const by = new Map<string, number>();
      for (const k of kids) {
        // Only outermost children of each name family.
        if (
          kids.some((o) =>
            o !== k && o.ts <= k.ts && o.ts + o.dur! >= k.ts + k.dur! && o.name !== task.name &&
            o.dur! > k.dur!
          )
        ) continue;
        by.set(k.name, (by.get(k.name) ?? 0) + k.dur!);
      }
      const top = [...by].sort((a, b) => b[1] - a[1]).slice(0, 8).map(([n, d]) =>
        `${n} ${(d / 1000).toFixed(1)}`
      );
      console.log(
        `  task ${(task.dur! / 1000).toFixed(1)} ms at ${((task.ts - begin) / 1000).toFixed(0)}: ${
          top.join(", ")
        }`,
      );
      const self = new Map<string, number>();
      const incl = new Map<string, number>();
      let total = 0;
      profile.samples.forEach((nid, i) => {
        const ts = sampleTs[i];
        if (ts < task.ts || ts > task.ts + task.dur!) return;
        total++;
        const n = nodeById.get(nid)!;
        const name = (x: ProfileNode) => `${x.callFrame.functionName || "(anon)"}:${x.callFrame.lineNumber}`;
        self.set(name(n), (self.get(name(n)) ?? 0) + 1);
        const seen = new Set<string>();
        for (let c: number | undefined = nid; c !== undefined; c = parent.get(c)) {
          const k = name(nodeById.get(c)!);
          if (seen.has(k)) continue;
          seen.add(k);
          incl.set(k, (incl.get(k) ?? 0) + 1);
        }
      });
      const fmt = (m: Map<string, number>, k: number) =>
        [...m].sort((a, b) => b[1] - a[1]).slice(0, k).map(([n, c]) => `${n} ${(c * 0.2).toFixed(1)}`).join(
          ", ",
        );
      console.log(`    samples ${total}; self: ${fmt(self, 12)}`);
      console.log(`    incl: ${fmt(incl, 25)}`);
    }
  }
} finally {
  await browser.close();
  await daemon.stop();
}
