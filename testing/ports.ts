/**
 * Free loopback ports for test servers; a module of its own so the helpers that need one import nothing else.
 *
 * A test that kills its daemon and starts it again on the same port (a restart) leaves that port free in
 * between, and a port the kernel handed out for `port: 0` was then taken by whatever bound or connected next:
 * every port-0 listener (fixtures, in-process daemons) and every outgoing connection draws from Linux's
 * ephemeral range (32768–60999), and under the parallel suite one did, so the restart failed with AddrInUse.
 * These ports come from below that range instead, and each is reserved across processes: an exclusive lock on
 * a file named after it, held until the process that drew it exits (the kernel drops the lock with it).
 */

/** The range ports are drawn from: above the registered services most machines run, below the ephemeral range. */
const FIRST = 20_000;
const LAST = 32_767;
/** One directory per user: a file another user made there could not be opened to lock. */
const DIR = `${Deno.env.get("TMPDIR") ?? "/tmp"}/lvmh-test-ports-${Deno.uid() ?? "any"}`;

/** The lock files of this process's ports, open for as long as it runs: each lock is a reservation. */
const held: Deno.FsFile[] = [];

/** Reserve a free TCP port on loopback for this process. */
export function freePort(): number {
  for (let tries = 0; tries < 1000; tries++) {
    const port = FIRST + Math.floor(Math.random() * (LAST - FIRST + 1));
    if (reservePort(port)) return port;
  }
  throw new Error(`no free port between ${FIRST} and ${LAST}`);
}

/**
 * Reserve `port` for this process when no other holds it and nothing listens on it now.
 * @returns false when another process (or an earlier call of this one) reserved it, or it is in use.
 */
export function reservePort(port: number): boolean {
  Deno.mkdirSync(DIR, { recursive: true });
  const file = Deno.openSync(`${DIR}/${port}`, { create: true, write: true });
  if (!file.tryLockSync(true)) {
    file.close();
    return false;
  }
  try {
    Deno.listen({ hostname: "127.0.0.1", port }).close();
  } catch (error) {
    file.close(); // and with it the lock
    if (error instanceof Deno.errors.AddrInUse) return false;
    throw error;
  }
  held.push(file);
  return true;
}
