/**
 * Test helper: the processes still using a throwaway pi HOME, read from /proc. A pi the test has stopped can
 * outlive the stop by a moment (`script`, the pty wrapper of the TUI tests, dies at once on SIGKILL; the pi
 * under it gets SIGHUP and then runs session_shutdown, where the plugin writes its seq file), so a HOME
 * removed at once comes back holding `.pi/lvmh-agent/seq/<id>`. Cleanup waits for these pids to be gone.
 */
import { waitFor } from "./daemon.ts";

/** Pids of live processes started with `HOME=home` or whose working directory is inside `dir`. */
export async function pidsUsing(dir: string, home: string): Promise<number[]> {
  const wanted = new TextEncoder().encode(`HOME=${home}\0`);
  const pids: number[] = [];
  for await (const entry of Deno.readDir("/proc")) {
    const pid = Number(entry.name);
    if (!Number.isInteger(pid) || pid === Deno.pid) continue;
    try {
      // A zombie (exited, not yet reaped) has neither: it writes nothing more, so it does not count.
      const cwd = await Deno.readLink(`/proc/${pid}/cwd`);
      if (cwd === dir || cwd.startsWith(`${dir}/`)) {
        pids.push(pid);
        continue;
      }
      const env = await Deno.readFile(`/proc/${pid}/environ`);
      if (hasLine(env, wanted)) pids.push(pid);
    } catch { /* gone meanwhile, or not ours to read */ }
  }
  return pids;
}

/** Whether the NUL-separated `environ` holds the entry `wanted` (which ends with its NUL). */
function hasLine(environ: Uint8Array, wanted: Uint8Array): boolean {
  let start = 0;
  while (start < environ.length) {
    let end = environ.indexOf(0, start);
    if (end < 0) end = environ.length;
    if (end + 1 - start === wanted.length && wanted.every((b, i) => environ[start + i] === b)) return true;
    start = end + 1;
  }
  return false;
}

/**
 * Wait until no process uses `dir`/`home` (see `pidsUsing`); past `timeoutMs`, SIGKILL what is left (a pi
 * the test forgot would otherwise outlive it) and wait for that too. Polls /proc: they are not our children.
 * Resolves with the pids it had to kill (none when everything exited by itself).
 */
export async function waitUnused(dir: string, home: string, timeoutMs = 10_000): Promise<number[]> {
  let left: number[] = [];
  const gone = async () => (left = await pidsUsing(dir, home)).length === 0;
  try {
    await waitFor(gone, `no process using ${dir}`, timeoutMs);
    return [];
  } catch { /* past the deadline: kill what is left */ }
  const killed = left;
  for (const pid of killed) {
    try {
      Deno.kill(pid, "SIGKILL");
    } catch { /* gone */ }
  }
  await waitFor(gone, `killed processes using ${dir} gone`, 5_000).catch(() => {});
  return killed;
}
