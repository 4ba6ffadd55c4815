/**
 * What one round of bench/latency.ts measured for each server, and how a load's rounds are printed: each round
 * with the servers' share of the machine and the host's, then the medians and their ratios against the goal,
 * all rounds' deltas together, and with `SEGMENTS=1` where a delta's time went and what lvmh's late ones
 * waited behind.
 */
import { pct } from "../testing/proc.ts";
import { addWaits, type Segments, type Waits } from "../testing/delta_trace_read.ts";
import type { GcSummary } from "../testing/gc_trace.ts";

const GOAL_RATIO = 1.3;

export type Server = "relay" | "denoRelay" | "mirror" | "lvmh";

export interface Figures {
  p50: number;
  p99: number;
  /** Every delay of the round, ms, ascending. */
  delays: number[];
  /** Mean per-browser traffic, KiB/s. */
  kibPerSec: number;
  deltas: number;
  /** The server's CPU over the window, % of one core. */
  cpu: number;
  /** How often per second the scheduler took a core from the server while it wanted to run, over the window. */
  preempted: number;
  /** How busy the whole machine was over the window, % of all its cores: the clients and anything else too. */
  machine: number;
  /** How much of that the host took from this virtual machine (steal), % of all its cores. */
  stolen: number;
  /** With `SEGMENTS=1`, for a server that traces its deltas. */
  segments?: Segments;
  /** With `SEGMENTS=1`, for lvmh: what its deltas later than the Deno relay's "in" p99 waited behind. */
  waits?: Waits;
  /** The browsers' window on the aligned clock (the scale load), which the segments keep to. */
  window?: [number, number];
  /** With `SEGMENTS=1`, for lvmh under the scale load: its main thread's collections in the window. */
  gc?: GcSummary;
}

/** One load's rounds: the pair of rounds kept for each, and the host's share in every run of it. */
export interface LoadRounds {
  name: string;
  rounds: Record<Server, Figures>[];
  /** Per round, % of the machine its host took in each run of the pair (the larger of its servers'). */
  stolen: number[][];
}

/** A server's use of the machine in a round, and with `SEGMENTS=1` its collections. */
const use = (f: Figures) =>
  `CPU ${f.cpu.toFixed(0)} %, preempted ${f.preempted.toFixed(0)}/s, ` +
  `machine ${f.machine.toFixed(0)} % busy (${f.stolen.toFixed(1)} % stolen)` +
  (f.gc
    ? `, GC ${f.gc.total.toFixed(1)} ms in ${f.gc.collections} pauses (${f.gc.full} full), longest ` +
      `${f.gc.longest.toFixed(1)} ms`
    : "");

/** Late deltas and what they waited behind, most often first. */
function describeWaits(w: Waits): string {
  const share = (n: number) => `${(100 * n / Math.max(1, w.late)).toFixed(0)} %`;
  const behind = Object.entries(w.behind).sort((a, b) => b[1] - a[1])
    .map(([label, n]) => `${label} ${share(n)}`);
  return `lvmh: ${w.late} of ${w.of} deltas (${
    (100 * w.late / Math.max(1, w.of)).toFixed(1)
  } %) reached the ` +
    `handler later than the Deno relay's "in" p99; they waited behind ${
      [...behind, `no traced task ${share(w.untraced)}`].join(", ")
    } (one delta may wait behind several)`;
}

/** What a round's runs again say: the host's share in each run, the kept one the least. */
const again = (runs: number[]) =>
  runs.length > 1
    ? `; run ${runs.length} times, the host took ${runs.map((x) => `${x.toFixed(1)} %`).join(", ")}`
    : "";

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ms = (x: number) => `${x.toFixed(2)} ms`;

/** Print a load's rounds, their medians against the goal and, with `segments`, where the time went. */
export function printLoad(load: LoadRounds, segments: boolean): void {
  const rs = load.rounds;
  const mirrored = rs.every((r) => r.mirror);
  for (const [i, r] of rs.entries()) {
    const mirror = r.mirror
      ? `mirror p50 ${ms(r.mirror.p50)} p99 ${ms(r.mirror.p99)} (${use(r.mirror)}), `
      : "";
    console.log(
      `  ${load.name}, round ${i + 1}: relay p50 ${ms(r.relay.p50)} p99 ${ms(r.relay.p99)} ` +
        `(${use(r.relay)}), ${mirror}lvmh p50 ${ms(r.lvmh.p50)} p99 ${ms(r.lvmh.p99)} (${use(r.lvmh)}), ` +
        `${r.lvmh.deltas} deltas` + again(load.stolen[i]),
    );
  }
  const m = (side: Server, k: "p50" | "p99" | "kibPerSec") => median(rs.map((r) => r[side][k]));
  const r50 = m("lvmh", "p50") / m("relay", "p50"), r99 = m("lvmh", "p99") / m("relay", "p99");
  const met = r50 <= GOAL_RATIO && r99 <= GOAL_RATIO;
  const traffic = Number.isNaN(m("lvmh", "kibPerSec"))
    ? ""
    : `; per-browser traffic relay ${m("relay", "kibPerSec").toFixed(1)} KiB/s, lvmh ${
      m("lvmh", "kibPerSec").toFixed(1)
    } KiB/s`;
  console.log(
    `  ${load.name}, medians: relay p50 ${ms(m("relay", "p50"))} p99 ${ms(m("relay", "p99"))}; lvmh p50 ` +
      `${ms(m("lvmh", "p50"))} p99 ${ms(m("lvmh", "p99"))}; lvmh/relay p50 ${r50.toFixed(2)}× p99 ` +
      `${r99.toFixed(2)}× (goal ≤ ${GOAL_RATIO}×: ${met ? "met" : "NOT met"})${traffic}`,
  );
  if (mirrored) {
    const ratio = (a: Server, b: Server, k: "p50" | "p99") => (m(a, k) / m(b, k)).toFixed(2);
    console.log(
      `  ${load.name}, medians: mirror p50 ${ms(m("mirror", "p50"))} p99 ${ms(m("mirror", "p99"))}` +
        (traffic ? `, ${m("mirror", "kibPerSec").toFixed(1)} KiB/s per browser` : "") +
        `; mirror/relay p50 ${ratio("mirror", "relay", "p50")}× p99 ${ratio("mirror", "relay", "p99")}× ` +
        `(lvmh's traffic), lvmh/mirror p50 ${ratio("lvmh", "mirror", "p50")}× p99 ` +
        `${ratio("lvmh", "mirror", "p99")}× (the rest of lvmh's work)`,
    );
  }
  // A round's p99 is its 8th-worst delta of 750 or so, and one stall of the machine moves it: the rounds'
  // deltas taken together are a sample ROUNDS times as large.
  const pooled = (side: Server) => rs.flatMap((r) => r[side].delays).sort((a, b) => a - b);
  const relayAll = pooled("relay"), lvmhAll = pooled("lvmh");
  console.log(
    `  ${load.name}, all rounds' deltas together: relay p50 ${ms(pct(relayAll, 0.5))} p99 ` +
      `${ms(pct(relayAll, 0.99))}; lvmh p50 ${ms(pct(lvmhAll, 0.5))} p99 ${ms(pct(lvmhAll, 0.99))}; ` +
      `lvmh/relay p50 ${(pct(lvmhAll, 0.5) / pct(relayAll, 0.5)).toFixed(2)}× p99 ` +
      `${(pct(lvmhAll, 0.99) / pct(relayAll, 0.99)).toFixed(2)}×` +
      (mirrored
        ? `; mirror p99 ${ms(pct(pooled("mirror"), 0.99))}, mirror/relay ` +
          `${(pct(pooled("mirror"), 0.99) / pct(relayAll, 0.99)).toFixed(2)}×, lvmh/mirror ` +
          `${(pct(lvmhAll, 0.99) / pct(pooled("mirror"), 0.99)).toFixed(2)}×`
        : ""),
  );
  if (segments) {
    const seg = (side: Server, k: keyof Segments) => median(rs.map((r) => r[side].segments![k]));
    for (const side of ["denoRelay", "lvmh"] as const) {
      console.log(
        `  ${load.name}, ${side === "lvmh" ? "lvmh" : "relay on Deno"} from the stamp (p50/p99): in ` +
          `${seg(side, "in50").toFixed(2)}/${seg(side, "in99").toFixed(2)} ms, handled ` +
          `${seg(side, "handled50").toFixed(2)}/${seg(side, "handled99").toFixed(2)} ms, all ` +
          `${m(side, "p50").toFixed(2)}/${m(side, "p99").toFixed(2)} ms`,
      );
    }
    console.log(`  ${load.name}, ${describeWaits(addWaits(rs.map((r) => r.lvmh.waits!)))}`);
  }
}
