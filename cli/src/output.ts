/** Plain output: JSON lines, aligned tables, and the short forms of times and long text. */
import process from "node:process";

/** One JSON object per line (`jq` friendly). */
export function printJsonLines(items: readonly unknown[]): void {
  for (const item of items) process.stdout.write(JSON.stringify(item) + "\n");
}

/** Print rows as a table with aligned columns (the last column is not padded). */
export function printTable(
  header: readonly string[],
  rows: readonly (readonly unknown[])[],
): void {
  const all = [header, ...rows].map((r) => r.map((c) => String(c ?? "")));
  const widths = header.map((_, i) => Math.max(...all.map((r) => r[i].length)));
  for (const r of all) {
    process.stdout.write(
      r.map((c, i) => i === r.length - 1 ? c : c.padEnd(widths[i])).join("  ") +
        "\n",
    );
  }
}

/** How long ago `ms` (epoch milliseconds) was: `5s ago`, `3m ago`, …; `never` for none. */
export function ago(ms: number | null | undefined): string {
  if (!ms) return "never";
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86400)}d ago`;
}

/** `text` on one line, cut to `max` characters with an ellipsis. */
export function short(text: unknown, max = 120): string {
  const one = String(text ?? "").replace(/\s+/g, " ").trim();
  return one.length > max ? one.slice(0, max - 1) + "…" : one;
}
