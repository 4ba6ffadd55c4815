/**
 * Fan-out benchmark (issue 14): the `message_update` delay from the plugin's stamp to each watching browser,
 * with 20 watchers on one session, measured from outside the daemon: the plugin is one process and the 20
 * browsers are spread over 4 processes of 5 (bench/_fanout_agent.ts, bench/_fanout_browsers.ts), stamps on the
 * shared wall clock. Printed beside, from the same run: the same load with the plugin and all 20 browsers in
 * this one process (bench/daemon.ts's figure, where the 20 browsers share one event loop) and one watcher alone
 * in its own process. Rounds of the three alternate, each on a fresh daemon, since the two cores' other work
 * moves all of them. Run: `deno run -A bench/fanout.ts` (ROUNDS=n, default 3).
 */
import { startDaemon } from "../testing/daemon.ts";
import { fanOutLoad } from "./daemon.ts";
import { cpuMs, daemonPid, lineReader, machineBusyMs, pct, signalChild } from "../testing/proc.ts";

const DELTAS = 1000;
export const WATCHERS = 20;
export const PROCESSES = 4;
const GOAL_P99_MS = 2;
const ROUNDS = Number(Deno.env.get("ROUNDS") ?? 3);
const here = (name: string) => new URL(name, import.meta.url).pathname;

export interface Load {
  delays: number[];
  /** Deliveries that never arrived (should be 0). */
  missing: number;
  /** Event-loop stalls over 5 ms in the watcher processes while they recorded. */
  stalls: number[];
  /** Whole-machine CPU over the load, % of 200. */
  machineCpu: number;
  /** The part of it that was not this load (daemon, plugin, watchers, this process): other work, % of 200. */
  otherCpu: number;
  /** Largest correction any watcher process applied to its clock (testing/proc.ts `wallClock`), ms. */
  offsetMs: number;
}

function spawn(script: string, args: string[], stdin: "piped" | "null") {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", here(script), ...args],
    stdin,
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
}

/** The daemon a fan-out load runs against: its sockets, its token and its pid (for its CPU). */
export interface FanOutTarget {
  agentUrl: string;
  token: string;
  browserUrl: string;
  pid: number;
}

/** One plugin process and `processes` watcher processes of `perProcess` browsers each, on a fresh daemon. */
async function freshIndependentLoad(processes: number, perProcess: number): Promise<Load> {
  await using d = await startDaemon();
  return await independentLoad({ ...d, pid: daemonPid(d.dataDir) }, processes, perProcess);
}

/** One plugin process and `processes` watcher processes of `perProcess` browsers each, against `d`. */
export async function independentLoad(d: FanOutTarget, processes: number, perProcess: number): Promise<Load> {
  const sessionId = "fan";
  const agent = spawn("_fanout_agent.ts", [d.agentUrl, d.token, sessionId, String(DELTAS)], "piped");
  const agentOut = lineReader(agent.stdout);
  const writer = agent.stdin.getWriter();
  const command = (line: string) => writer.write(new TextEncoder().encode(`${line}\n`));
  let watchers: { child: Deno.ChildProcess; next: () => Promise<string | null> }[] = [];
  try {
    if (await agentOut() !== "ready") throw new Error("the plugin process ended before its welcome");
    watchers = Array.from({ length: processes }, () => {
      const child = spawn(
        "_fanout_browsers.ts",
        [d.browserUrl, sessionId, String(perProcess), String(DELTAS), "60000"],
        "null",
      );
      return { child, next: lineReader(child.stdout) };
    });
    // Probe until every browser of every process has seen a probe delta, i.e. is subscribed.
    const ready = Promise.all(watchers.map(async (w) => {
      if (await w.next() !== "ready") throw new Error("a watcher process ended before it was subscribed");
    }));
    let subscribed = false;
    ready.then(() => subscribed = true, () => {});
    const probeDeadline = performance.now() + 30_000;
    while (!subscribed) {
      if (performance.now() > probeDeadline) throw new Error("watchers not subscribed within 30 s");
      await command("probe");
      await Promise.race([ready, new Promise((r) => setTimeout(r, 50))]);
    }
    await ready;
    const pid = d.pid;
    const machine0 = machineBusyMs(), t0 = performance.now(), own0 = cpuMs(pid) + cpuMs(Deno.pid);
    await command("go");
    const sent = (await agentOut())?.split(" ");
    if (sent?.[0] !== "sent") throw new Error("the plugin process ended while streaming");
    const results = await Promise.all(watchers.map(async (w) => {
      const line = await w.next();
      const status = await w.child.status;
      if (!line || !status.success) throw new Error("a watcher process failed");
      return JSON.parse(line) as {
        delays: number[];
        missing: number;
        stalls: number[];
        offsetMs: number;
        cpuMs: number;
      };
    }));
    const wall = performance.now() - t0;
    const machineCpu = ((machineBusyMs() - machine0) / wall) * 100;
    // Each client process reports its own CPU over its part of the window (it exits right after).
    const own = cpuMs(pid) + cpuMs(Deno.pid) - own0 + Number(sent[1]) +
      results.reduce((n, r) => n + r.cpuMs, 0);
    return {
      delays: results.flatMap((r) => r.delays).sort((a, b) => a - b),
      missing: results.reduce((n, r) => n + r.missing, 0),
      stalls: results.flatMap((r) => r.stalls),
      machineCpu,
      otherCpu: Math.max(0, machineCpu - (own / wall) * 100),
      offsetMs: Math.max(...results.map((r) => Math.abs(r.offsetMs))),
    };
  } finally {
    await writer.close().catch(() => {});
    await agent.status;
    // After a failure, the watcher processes that are still waiting for deltas are not left behind.
    for (const w of watchers) {
      signalChild(w.child);
      await w.child.status;
    }
  }
}

/** The same load with the plugin and all 20 browsers in this process (bench/daemon.ts's fan-out figure). */
async function oneProcessLoad(): Promise<Load> {
  await using d = await startDaemon();
  const pid = daemonPid(d.dataDir);
  const machine0 = machineBusyMs(), t0 = performance.now(), own0 = cpuMs(pid) + cpuMs(Deno.pid);
  const delays = await fanOutLoad(d);
  const wall = performance.now() - t0;
  const machineCpu = ((machineBusyMs() - machine0) / wall) * 100;
  const otherCpu = Math.max(0, machineCpu - ((cpuMs(pid) + cpuMs(Deno.pid) - own0) / wall) * 100);
  return {
    delays,
    missing: DELTAS * WATCHERS - delays.length,
    stalls: [],
    machineCpu,
    otherCpu,
    offsetMs: 0,
  };
}

const f = (l: Load) =>
  `p50 ${pct(l.delays, 0.5).toFixed(2)} ms, p99 ${pct(l.delays, 0.99).toFixed(2)} ms, max ${
    l.delays.at(-1)!.toFixed(1)
  } ms over ${l.delays.length}${l.missing ? ` (${l.missing} MISSING)` : ""}; machine ${
    l.machineCpu.toFixed(0)
  } % of 200 (other work ${l.otherCpu.toFixed(0)} %)${
    l.offsetMs ? `; clocks aligned by ≤ ${(l.offsetMs * 1000).toFixed(0)} µs` : ""
  }${
    l.stalls.length
      ? `; watcher stalls > 5 ms: ${l.stalls.length}, worst ${Math.max(...l.stalls).toFixed(0)} ms`
      : ""
  }`;

if (import.meta.main) {
  const rounds: { spread: Load; one: Load; single: Load }[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const spread = await freshIndependentLoad(PROCESSES, WATCHERS / PROCESSES);
    const one = await oneProcessLoad();
    const single = await freshIndependentLoad(1, 1);
    rounds.push({ spread, one, single });
  }
  console.log(
    `fan-out: one plugin streaming ${DELTAS} message_update 1 ms apart, delay from the plugin's stamp to each ` +
      `browser; ${ROUNDS} rounds, a fresh daemon for each load`,
  );
  rounds.forEach((r, i) => {
    console.log(`  round ${i + 1}`);
    console.log(
      `    ${WATCHERS} watchers in ${PROCESSES} processes of ${WATCHERS / PROCESSES}: ${f(r.spread)}`,
    );
    console.log(`    ${WATCHERS} watchers and the plugin in one process:  ${f(r.one)}`);
    console.log(`    1 watcher in its own process:                  ${f(r.single)}`);
  });
  const median = (pick: (r: (typeof rounds)[number]) => Load) =>
    rounds.map((r) => pct(pick(r).delays, 0.99)).sort((a, b) => a - b)[Math.floor(rounds.length / 2)];
  const spreadP99 = median((r) => r.spread),
    oneP99 = median((r) => r.one),
    singleP99 = median((r) => r.single);
  console.log(
    `  median p99: ${WATCHERS} watchers in ${PROCESSES} processes ${
      spreadP99.toFixed(2)
    } ms (goal < ${GOAL_P99_MS} ms: ${spreadP99 < GOAL_P99_MS ? "met" : "NOT met"}); in one process ${
      oneP99.toFixed(2)
    } ms; 1 watcher ${singleP99.toFixed(2)} ms`,
  );
}
