/**
 * Bench and harness helper: find the daemon process that a `testing/daemon.ts` daemon runs (by its data dir,
 * which only that process has in its environment) and read its resident memory from /proc, from outside.
 */

/** The clock helpers live with the daemon, which stamps with them too (lib/delta_trace.ts). */
export { nowMs, wallClock } from "../lib/wall_clock.ts";

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

/**
 * A 1 ms timer that notes every tick later than `thresholdMs`: this process's own event-loop stalls, so a
 * bench can tell a late delivery caused by its clients from one caused by the daemon.
 */
export function lagMonitor(thresholdMs = 5): { stop(): number[] } {
  const stalls: number[] = [];
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    if (now - last > thresholdMs) stalls.push(now - last);
    last = now;
  }, 1);
  return {
    stop() {
      clearInterval(timer);
      return stalls;
    },
  };
}

/**
 * The fields of a stat(5) file (`/proc/<pid>/stat`, `/proc/<pid>/task/<tid>/stat`) after the command name,
 * which may hold spaces and parentheses: index 0 is field 3 (state), so field n is at n - 3.
 * @throws {Error} when the file is gone.
 */
export function statFields(path: string): string[] {
  const stat = Deno.readTextFileSync(path);
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
}

/** CPU time (user + system) a process has used so far, in ms, or NaN when it is gone. */
export function cpuMs(pid: number): number {
  try {
    const fields = statFields(`/proc/${pid}/stat`);
    // utime and stime are fields 14 and 15 of stat(5).
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // USER_HZ is 100 on Linux
  } catch {
    return NaN;
  }
}

/**
 * How often the scheduler has taken a core from any of a process's threads while it still wanted to run
 * (involuntary context switches, summed over its threads; 0 when it is gone). On a machine whose cores a
 * server shares with its clients, each is a wait of up to a time slice for whatever it was doing.
 */
export function preemptions(pid: number): number {
  let total = 0;
  try {
    for (const task of Deno.readDirSync(`/proc/${pid}/task`)) {
      try {
        const status = Deno.readTextFileSync(`/proc/${pid}/task/${task.name}/status`);
        total += Number(/^nonvoluntary_ctxt_switches:\s*(\d+)$/m.exec(status)?.[1] ?? 0);
      } catch { /* the thread ended meanwhile */ }
    }
  } catch { /* the process is gone */ }
  return total;
}

/**
 * Give every thread of a process the niceness `nice` (`renice`, util-linux; below 0 needs root or
 * CAP_SYS_NICE). Linux keeps a niceness per thread and a new thread takes its creator's, so this goes again
 * over the threads that appeared meanwhile until none did: later ones are then all made by reniced threads.
 * @throws {Error} when `renice` refuses.
 */
export function reniceThreads(pid: number, nice: number): void {
  const renice = (tids: string[]) =>
    new Deno.Command("renice", { args: ["-n", String(nice), "-p", ...tids], stdout: "null", stderr: "piped" })
      .outputSync();
  const done = new Set<string>();
  for (;;) {
    const fresh = [...Deno.readDirSync(`/proc/${pid}/task`)].map((t) => t.name).filter((t) => !done.has(t));
    if (fresh.length === 0) return;
    let out = renice(fresh);
    // A thread that ended between the listing and renice fails the call: the ones still there go again.
    const alive = out.success ? [] : fresh.filter((tid) => existsTask(pid, tid));
    if (alive.length) out = renice(alive);
    if (alive.length && !out.success) {
      throw new Error(`renice ${nice} failed: ${new TextDecoder().decode(out.stderr).trim()}`);
    }
    for (const tid of fresh) done.add(tid);
  }
}

/** Whether thread `tid` of process `pid` still runs. */
function existsTask(pid: number, tid: string): boolean {
  try {
    Deno.statSync(`/proc/${pid}/task/${tid}`);
    return true;
  } catch {
    return false;
  }
}

/**
 * CPU time (user + system) of a process and all its descendants so far, in ms: its own, what its ended and
 * reaped children used (cutime, cstime), and each live descendant's the same way. A server that forks a
 * process per connection (PostgreSQL) is counted whole, whether its backends still run or are gone.
 */
export function treeCpuMs(pid: number): number {
  const children = new Map<number, number[]>();
  const times = new Map<number, number>();
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const fields = statFields(`/proc/${entry.name}/stat`);
      // ppid is field 4 of stat(5); utime, stime, cutime, cstime fields 14–17.
      const ppid = Number(fields[1]);
      children.set(ppid, [...children.get(ppid) ?? [], Number(entry.name)]);
      times.set(Number(entry.name), fields.slice(11, 15).reduce((sum, f) => sum + Number(f), 0));
    } catch { /* gone meanwhile */ }
  }
  let ticks = 0;
  const stack = [pid];
  while (stack.length) {
    const p = stack.pop()!;
    ticks += times.get(p) ?? 0;
    stack.push(...children.get(p) ?? []);
  }
  return (ticks * 1000) / 100; // USER_HZ is 100 on Linux
}

/**
 * CPU time of every process on the machine so far, in ms (from /proc/stat), to show what else ran: `busy` is
 * everything but idle and iowait, and `stolen` the part of it the hypervisor ran something else while this
 * machine's cores had work (steal: on a virtual machine, a thread that was ready to run waited for the host).
 */
export function machineCpuMs(): { busy: number; stolen: number } {
  const cpu = Deno.readTextFileSync("/proc/stat").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal, in ticks of 10 ms (USER_HZ is 100 on Linux).
  const ms = (ticks: number) => ticks * 10;
  return { busy: ms(cpu[0] + cpu[1] + cpu[2] + cpu[5] + cpu[6] + cpu[7]), stolen: ms(cpu[7]) };
}

/** `machineCpuMs().busy`. */
export function machineBusyMs(): number {
  return machineCpuMs().busy;
}

/**
 * Send `signal` to a child unless it has ended. Deno throws ("Child process has already terminated") for a
 * child whose end it has read, which can be before the caller's own status handler has run: a timer that
 * kills a slow child would otherwise throw out of the test.
 */
export function signalChild(child: Deno.ChildProcess, signal: Deno.Signal = "SIGTERM"): void {
  try {
    child.kill(signal);
  } catch { /* already ended */ }
}

/** The lines a child process writes to stdout, one at a time; null once it closed. */
export function lineReader(stream: ReadableStream<BufferSource>): () => Promise<string | null> {
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  return async () => {
    while (!buffered.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) {
        const rest = buffered;
        buffered = "";
        return rest || null;
      }
      buffered += value;
    }
    const at = buffered.indexOf("\n");
    const line = buffered.slice(0, at);
    buffered = buffered.slice(at + 1);
    return line;
  };
}
