/**
 * Bench and harness helper: find the daemon process that a `tests/_daemon.ts` daemon runs (by its data dir,
 * which only that process has in its environment) and read its resident memory from /proc, from outside.
 */

/** The pid of the process whose environment holds `LVMH_DATA_DIR=<dataDir>`; throws when there is none. */
export function daemonPid(dataDir: string): number {
  const needle = `LVMH_DATA_DIR=${dataDir}\0`;
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const env = Deno.readTextFileSync(`/proc/${entry.name}/environ`);
      if (`${env}\0`.includes(needle)) return Number(entry.name);
    } catch { /* gone, or not ours to read */ }
  }
  throw new Error(`Cannot find the daemon process of data dir "${dataDir}"`);
}

/** Resident set size of `pid` in MiB (VmRSS), or NaN when the process is gone. */
export function rssMiB(pid: number): number {
  try {
    const status = Deno.readTextFileSync(`/proc/${pid}/status`);
    const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]);
    return kb / 1024;
  } catch {
    return NaN;
  }
}

/** The value at quantile `p` (0–1) of an ascending array. */
export function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

/** Wall clock in ms with sub-ms resolution, comparable across processes on one machine. */
export function nowMs(): number {
  return performance.timeOrigin + performance.now();
}
