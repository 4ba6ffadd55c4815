/**
 * Cost (or tokens) per day as stacked bars, drawn as SVG on the server: no chart library, nothing to load,
 * and it scales to a phone's width through its viewBox. Each stack is one repository or model (the five
 * largest, the rest as "other"), with a legend and a title per bar segment for the exact figure.
 */
import { formatCost, formatTokens } from "../ui/format.ts";

/** What the chart reads of a run (`UsageRun` of lib/usage.ts, which stays on the server). */
interface UsageRun {
  day: string;
  repo: string | null;
  model: string;
  inputTokens: number;
  outputTokens: number;
  cost: number;
}

const COLORS = ["#4f46e5", "#0891b2", "#d97706", "#16a34a", "#db2777", "#9ca3af"];
const W = 640;
const H = 220;
const PAD = { left: 52, right: 8, top: 8, bottom: 28 };

/** Stacked series: the days of the range, the stacks in order, and each day's amount per stack. */
export function stackRuns(
  runs: readonly UsageRun[],
  days: readonly string[],
  stack: "repo" | "model",
  measure: "cost" | "tokens",
): { stacks: string[]; values: Map<string, number[]> } {
  const amount = (r: UsageRun) => (measure === "cost" ? r.cost : r.inputTokens + r.outputTokens);
  const keyOf = (r: UsageRun) => (stack === "repo" ? r.repo ?? "(terminal)" : r.model);
  const totals = new Map<string, number>();
  for (const r of runs) totals.set(keyOf(r), (totals.get(keyOf(r)) ?? 0) + amount(r));
  const ranked = [...totals.entries()].sort((a, b) => b[1] - a[1]).map(([k]) => k);
  const top = ranked.slice(0, 5);
  const stacks = ranked.length > 5 ? [...top, "other"] : top;
  const index = new Map(days.map((d, i) => [d, i]));
  const values = new Map(stacks.map((s) => [s, days.map(() => 0)]));
  for (const r of runs) {
    const i = index.get(r.day);
    if (i === undefined) continue;
    const k = top.includes(keyOf(r)) ? keyOf(r) : "other";
    values.get(k)![i] += amount(r);
  }
  return { stacks, values };
}

export function UsageChart(
  { runs, days, stack, measure }: {
    runs: readonly UsageRun[];
    days: readonly string[];
    stack: "repo" | "model";
    measure: "cost" | "tokens";
  },
) {
  const { stacks, values } = stackRuns(runs, days, stack, measure);
  const fmt = measure === "cost" ? formatCost : formatTokens;
  const totals = days.map((_, i) => stacks.reduce((t, s) => t + values.get(s)![i], 0));
  const max = Math.max(...totals, measure === "cost" ? 0.01 : 1);
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const bw = plotW / Math.max(days.length, 1);
  const y = (v: number) => PAD.top + plotH - (v / max) * plotH;
  const labelEvery = Math.ceil(days.length / 8);
  return (
    <figure class="usage-chart" data-chart={measure}>
      <svg
        viewBox={`0 0 ${W} ${H}`}
        width="100%"
        role="img"
        aria-label={`${measure === "cost" ? "Cost" : "Tokens"} per day, stacked by ${stack}`}
      >
        {[0, 0.5, 1].map((f) => (
          <g key={f}>
            <line x1={PAD.left} x2={W - PAD.right} y1={y(max * f)} y2={y(max * f)} stroke="#e5e7eb" />
            <text x={PAD.left - 4} y={y(max * f) + 4} text-anchor="end" font-size="11" fill="#6b7280">
              {fmt(max * f)}
            </text>
          </g>
        ))}
        {days.map((d, i) => {
          let base = 0;
          return (
            <g key={d} data-day={d}>
              {stacks.map((s, si) => {
                const v = values.get(s)![i];
                if (v <= 0) return null;
                const top = y(base + v);
                const h = y(base) - top;
                base += v;
                return (
                  <rect
                    key={s}
                    x={PAD.left + i * bw + bw * 0.1}
                    y={top}
                    width={bw * 0.8}
                    height={Math.max(h, 0.5)}
                    fill={COLORS[si % COLORS.length]}
                    data-stack={s}
                  >
                    <title>{`${d} · ${s}: ${fmt(v)}`}</title>
                  </rect>
                );
              })}
              {i % labelEvery === 0 && (
                <text
                  x={PAD.left + i * bw + bw / 2}
                  y={H - 10}
                  text-anchor="middle"
                  font-size="10"
                  fill="#6b7280"
                >
                  {d.slice(5)}
                </text>
              )}
            </g>
          );
        })}
      </svg>
      <figcaption class="legend">
        {stacks.length === 0
          ? <span class="muted">No runs in this range.</span>
          : stacks.map((s, si) => (
            <span key={s} class="legend-item">
              <span class="swatch" style={`background: ${COLORS[si % COLORS.length]}`}></span>
              {s}
            </span>
          ))}
      </figcaption>
    </figure>
  );
}
