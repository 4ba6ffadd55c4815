/**
 * Delta latency against this machine's own floor: how long a `message_update` takes from the plugin's stamp to
 * a browser through lvmh, beside the same load through the smallest server that can do that job
 * (bench/_relay.mjs: answers hello and the heartbeat's ping, forwards each delta to the session's followers,
 * stores nothing). Absolute milliseconds depend on the machine and on what else runs on it; the ratio to a
 * floor measured in the same run does not, so the goal is a ratio: lvmh's p50 and p99 each within 1.3× of
 * the relay's.
 *
 * Two loads, each on the relay then on lvmh, alternating, several rounds (a fresh server each time):
 * - scale: N plugin sockets connected (the idle ones in one process, the 10 working ones in another, a run
 *   every 200 ms: agent_start, a user message, 5 deltas, message_end, agent_end; each socket pings every 5 s
 *   and promises it, as the plugin does: bench/_scale_agents.ts), 5 browsers in 5 processes
 *   each following one working session, at 100 and 3,000 sessions;
 * - fan-out: one plugin streaming 1,000 deltas 1 ms apart to 20 browsers in 4 processes (bench/fanout.ts's load).
 * Every process stamps and reads the wall clock aligned to the system clock (testing/proc.ts `wallClock`).
 * lvmh's browsers receive what they always do (persisted events, list updates); the relay's only the deltas,
 * and the per-browser traffic is printed beside. The goal is judged on the medians of the rounds' figures; the
 * same figures over all rounds' deltas together are printed beside them. Run: `deno run -A bench/latency.ts`
 * (ROUNDS=n, default 3; SIZES=100,3000 and FANOUT=0 narrow the loads; WINDOW_S=n, default 6, lengthens the scale
 * load's window).
 *
 * `SEGMENTS=1` adds where the time goes: the same relay on Deno (bench/_relay_deno.ts, the runtime's own floor)
 * runs beside the two, and it and lvmh trace each delta (lib/delta_trace.ts): from the plugin's stamp to the
 * server's handler getting the frame ("in"), to the handler being done ("handled"), and to the browser ("all").
 * lvmh also traces the tasks of its event loop, and the bench names what its deltas that came in later than the
 * Deno relay's "in" p99 waited behind (testing/delta_trace_read.ts). lvmh then runs with V8's `--trace-gc-nvp`,
 * and each round says how long its main thread paused for collections in the window (testing/gc_trace.ts): a
 * pause runs inside no traced task, so the waits above count it as "no traced task".
 *
 * Every round also prints how often the scheduler took a core from each server while it wanted to run
 * (preemptions per second, all its threads), and how busy the machine was: the servers share its cores with
 * their clients, and a round in which something else ran shows it there, the host of a virtual machine too
 * (its steal time: the cores had work and the host ran something else). With `NICE=<n>` (below 0 needs root)
 * every server's threads run at that niceness, so that the servers, all alike, come ahead of their clients.
 * `V8_FLAGS=--a,--b` runs lvmh with those V8 flags too. `STEAL_MAX` (default 5) is the share of the machine
 * its host may take in a pair of rounds before the pair runs again (`STEAL_MAX=100`: never).
 *
 * `MIRROR=1` adds a third server between the two: the relay sending everything else lvmh's peers get for the
 * same load (every event, the list's updates, acks; bench/_relay_mirror.mjs), storing nothing. Its figures
 * split lvmh's distance from the floor into what that traffic costs on this machine (mirror/relay) and what
 * the rest of lvmh's work does (lvmh/mirror).
 */
import { startDaemon } from "../testing/daemon.ts";
import {
  cpuMs,
  daemonPid,
  lineReader,
  machineCpuMs,
  pct,
  preemptions,
  reniceThreads,
} from "../testing/proc.ts";
import { type FanOutTarget, independentLoad, PROCESSES, WATCHERS } from "./fanout.ts";
import { type DeltaTraceFile, parseTrace, segments, waits } from "../testing/delta_trace_read.ts";
import { gcWithin, parseGcPauses } from "../testing/gc_trace.ts";
import { type Figures, type LoadRounds, printLoad, type Server } from "./latency_report.ts";

const SIZES = (Deno.env.get("SIZES") ?? "100,3000").split(",").map(Number);
const ROUNDS = Number(Deno.env.get("ROUNDS") ?? 3);
const WORKING = 10;
const INTERVAL_MS = 200;
const BROWSERS = 5;
const WARMUP_MS = 1500;
/** The scale load's window; longer windows put each round's p99 on more deltas (750 per 6 s). */
const WINDOW_MS = Number(Deno.env.get("WINDOW_S") ?? 6) * 1000;
/**
 * A pair of rounds in which the host took more than this of the machine (% of all its cores, in either round)
 * is run again, up to AGAIN_MAX more times, and the pair with the least taken counts: steal came and went by
 * round on this kind of machine (0–36 %), and both servers' tails move with it.
 */
const STEAL_MAX = Number(Deno.env.get("STEAL_MAX") ?? 5);
const AGAIN_MAX = 2;
const here = (name: string) => new URL(name, import.meta.url).pathname;

const SEGMENTS = Deno.env.get("SEGMENTS") === "1";
const MIRROR = Deno.env.get("MIRROR") === "1";
const NICE = Deno.env.get("NICE") ? Number(Deno.env.get("NICE")) : undefined;
/** V8 flags for lvmh beside its own (lib/v8_flags.ts), to try a collector setting against the same load. */
const V8_FLAGS = (Deno.env.get("V8_FLAGS") ?? "").split(",").filter(Boolean);

/** A server under load: where plugins and browsers connect, and its process (for its CPU). */
interface Target extends FanOutTarget {
  close(): Promise<void>;
  /** The file its delta trace is written to at exit (lib/delta_trace.ts), when it keeps one. */
  trace?: string;
  /** What it printed, with V8's `--trace-gc-nvp` lines (lvmh with `SEGMENTS=1`), read once it exited. */
  output?: () => string;
}

/**
 * The relay on Node (bench/_relay.mjs; `mirror`: with the rest of lvmh's traffic), or with `deno` its copy on
 * Deno tracing its deltas to a file.
 */
async function startRelay(runtime: "node" | "deno" | "mirror" = "node"): Promise<Target> {
  const trace = runtime === "deno" ? await Deno.makeTempFile({ prefix: "lvmh-trace-" }) : undefined;
  const child = new Deno.Command(runtime === "deno" ? Deno.execPath() : "node", {
    args: runtime === "deno"
      ? ["run", "-A", here("_relay_deno.ts")]
      : [here("_relay.mjs"), ...runtime === "mirror" ? ["--mirror"] : []],
    env: trace ? { LVMH_TRACE_DELTAS: trace } : {},
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const next = lineReader(child.stdout);
  const port = /^ready (\d+)$/.exec(await next() ?? "")?.[1];
  if (!port) throw new Error("the relay did not start (is `ws` in node_modules? run `deno task bench` once)");
  return {
    agentUrl: `ws://127.0.0.1:${port}/agent/ws`,
    browserUrl: `ws://127.0.0.1:${port}/ws`,
    token: "relay",
    pid: child.pid,
    trace,
    async close() {
      await child.stdin.close();
      await child.status;
    },
  };
}

async function startLvmh(): Promise<Target> {
  const trace = SEGMENTS ? await Deno.makeTempFile({ prefix: "lvmh-trace-" }) : undefined;
  const d = await startDaemon({
    ...trace ? { env: { LVMH_TRACE_DELTAS: trace } } : {},
    v8Flags: [...trace ? ["--trace-gc-nvp"] : [], ...V8_FLAGS],
  });
  return {
    ...d,
    pid: daemonPid(d.dataDir),
    close: () => d.stop(),
    trace,
    output: trace ? d.output : undefined,
  };
}

/** A server's delta trace, read (and removed) once it exited. */
async function readTrace(path: string): Promise<DeltaTraceFile> {
  const trace = parseTrace(await Deno.readTextFile(path));
  await Deno.remove(path);
  return trace;
}

/** A process of plugin sockets `scale-<from>` … (bench/_scale_agents.ts), once every one is welcomed. */
async function agents(t: Target, n: number, from: number, working: number) {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      here("_scale_agents.ts"),
      t.agentUrl,
      t.token,
      ...[n, working, INTERVAL_MS, from].map(String),
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const next = lineReader(child.stdout);
  if (await next() !== "ready") throw new Error("a plugin process ended before every socket was welcomed");
  return async () => {
    await child.stdin.close();
    await child.status;
    await child.stdout.cancel().catch(() => {});
  };
}

/**
 * What a server uses from now on: call the result at the end for its CPU (% of a core), its preemptions per
 * second, and how busy the machine was and how much of that its host took.
 */
function usage(pid: number): () => Pick<Figures, "cpu" | "preempted" | "machine" | "stolen"> {
  const cpu0 = cpuMs(pid), preempted0 = preemptions(pid), machine0 = machineCpuMs(), t0 = performance.now();
  return () => {
    const seconds = (performance.now() - t0) / 1000;
    const machine = machineCpuMs();
    /** ms of the machine's CPU time since the start, as % of all its cores. */
    const share = (ms: number) => ms / seconds / 10 / navigator.hardwareConcurrency;
    return {
      cpu: (cpuMs(pid) - cpu0) / seconds / 10,
      preempted: (preemptions(pid) - preempted0) / seconds,
      machine: share(machine.busy - machine0.busy),
      stolen: share(machine.stolen - machine0.stolen),
    };
  };
}

/** The scale load against `t` with `n` sessions connected. */
async function scaleLoad(t: Target, n: number): Promise<Figures> {
  const stopIdle = await agents(t, n - WORKING, WORKING, 0);
  const stopWorking = await agents(t, WORKING, 0, WORKING);
  try {
    const used = usage(t.pid);
    const browsers = await Promise.all(Array.from({ length: BROWSERS }, async (_, i) => {
      const out = await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          here("_scale_browser.ts"),
          t.browserUrl,
          `scale-${i}`,
          String(WARMUP_MS),
          String(WINDOW_MS),
        ],
        stdout: "piped",
        stderr: "inherit",
      }).output();
      if (!out.success) throw new Error("a browser process failed");
      return JSON.parse(new TextDecoder().decode(out.stdout)) as {
        bytesPerSec: number;
        delays: number[];
        from: number;
        to: number;
      };
    }));
    const delays = browsers.flatMap((b) => b.delays).sort((a, b) => a - b);
    if (!delays.length) throw new Error("no message_update reached a browser");
    return {
      p50: pct(delays, 0.5),
      p99: pct(delays, 0.99),
      delays,
      kibPerSec: browsers.reduce((s, b) => s + b.bytesPerSec, 0) / browsers.length / 1024,
      deltas: delays.length,
      ...used(),
      window: [Math.min(...browsers.map((b) => b.from)), Math.max(...browsers.map((b) => b.to))],
    };
  } finally {
    await stopWorking();
    await stopIdle();
  }
}

/** The fan-out load against `t`: 20 browsers in 4 processes following one streaming plugin. */
async function fanOutLoad(t: Target): Promise<Figures> {
  const used = usage(t.pid);
  const load = await independentLoad(t, PROCESSES, WATCHERS / PROCESSES);
  if (load.missing) throw new Error(`${load.missing} deltas never reached a browser`);
  return {
    p50: pct(load.delays, 0.5),
    p99: pct(load.delays, 0.99),
    delays: load.delays,
    kibPerSec: NaN,
    deltas: load.delays.length,
    ...used(),
  };
}

const starters: [Server, () => Promise<Target>][] = [
  ["relay", () => startRelay()],
  ...SEGMENTS ? [["denoRelay", () => startRelay("deno")] as [Server, () => Promise<Target>]] : [],
  ...MIRROR ? [["mirror", () => startRelay("mirror")] as [Server, () => Promise<Target>]] : [],
  ["lvmh", startLvmh],
];

/** Run `load` on a fresh relay, (with `SEGMENTS=1` on a fresh Deno relay,) then on a fresh lvmh. */
async function pair(load: (t: Target) => Promise<Figures>) {
  const figures: Partial<Record<Server, Figures>> = {};
  for (const [server, start] of starters) {
    const t = await start();
    if (NICE !== undefined) reniceThreads(t.pid, NICE);
    let f: Figures | undefined;
    try {
      f = await load(t);
    } finally {
      await t.close();
      // A failed load leaves its trace unread: it goes with the server.
      if (t.trace && !f) await Deno.remove(t.trace).catch(() => {});
    }
    if (t.trace) {
      const trace = await readTrace(t.trace);
      f.segments = segments(trace.deltas, f.window);
      const floor = figures.denoRelay?.segments?.in99;
      if (server === "lvmh" && floor !== undefined) f.waits = waits(trace, floor, f.window);
      // V8 counts from its isolate's start, ~10 ms before performance.now()'s zero here: the window's edges
      // move by that much, which a 6 s window can take.
      if (t.output && f.window && Number.isFinite(trace.origin)) {
        const [from, to] = f.window.map((at) => at - trace.origin);
        f.gc = gcWithin(parseGcPauses(t.output()), from, to);
      }
    }
    figures[server] = f;
  }
  return figures as Record<Server, Figures>;
}

/**
 * `pair`, run again while the host took more than STEAL_MAX of the machine in it (up to AGAIN_MAX times).
 * @returns the pair with the least taken, and what the host took in each run (the larger of its servers')
 */
async function quietestPair(load: (t: Target) => Promise<Figures>) {
  const runs: { figures: Record<Server, Figures>; stolen: number }[] = [];
  do {
    const figures = await pair(load);
    runs.push({ figures, stolen: Math.max(...Object.values(figures).map((f) => f.stolen)) });
  } while (runs.at(-1)!.stolen > STEAL_MAX && runs.length <= AGAIN_MAX);
  const kept = runs.reduce((a, b) => b.stolen < a.stolen ? b : a);
  return { figures: kept.figures, stolen: runs.map((run) => run.stolen) };
}

if (import.meta.main) {
  const loads: { name: string; run: (t: Target) => Promise<Figures> }[] = [
    ...SIZES.map((n) => ({
      name: `${n.toLocaleString("en")} sessions`,
      run: (t: Target) => scaleLoad(t, n),
    })),
    ...Deno.env.get("FANOUT") === "0" ? [] : [{ name: `fan-out ${WATCHERS} browsers`, run: fanOutLoad }],
  ];
  const results: LoadRounds[] = loads.map((load) => ({ name: load.name, rounds: [], stolen: [] }));
  for (let r = 0; r < ROUNDS; r++) {
    for (const [i, load] of loads.entries()) {
      const { figures, stolen } = await quietestPair(load.run);
      results[i].rounds.push(figures);
      results[i].stolen.push(stolen);
    }
  }
  console.log(
    `latency: message_update from the plugin's stamp to each browser, lvmh beside a relay that only forwards ` +
      `(bench/_relay.mjs), ${ROUNDS} rounds alternating, a fresh server each time; scale: ${WORKING} sessions ` +
      `working (a run every ${INTERVAL_MS} ms), ${BROWSERS} browsers in their own processes, ` +
      `${WINDOW_MS / 1000} s window; fan-out: ${WATCHERS} browsers in ${PROCESSES} processes` +
      (NICE === undefined ? "" : `; every server's threads at nice ${NICE}`) +
      `; a pair in which the host took over ${STEAL_MAX} % of the machine runs again (up to ${AGAIN_MAX} times)`,
  );
  for (const result of results) printLoad(result, SEGMENTS);
}
