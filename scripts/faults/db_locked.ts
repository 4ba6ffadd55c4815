/**
 * Fault rows: the database locked by another process (`BEGIN EXCLUSIVE` from node:sqlite, see _locker.ts).
 * At start the daemon must end with exit 2 and one clear line once the open's busy timeout passes. Mid-run, the
 * first write waits the busy timeout and is refused, the sockets whose events could not be committed are closed
 * without an ack, and the store's write gate refuses every other write without waiting until one succeeds: one
 * busy-timeout stall in all, not one per writer, so reads keep answering. After the lock goes, the plugins'
 * replay must leave every session's seqs complete and unique.
 */
import { runMainOnce, startDaemon, waitFor } from "../../testing/daemon.ts";
import { allEvents, sessions } from "../../testing/pi.ts";
import { finishScenario, refused, type ScenarioEnd, startFleet } from "./_fleet.ts";
import { witness } from "./_witness.ts";
import { REFUSED_AT_ONCE } from "../../lib/write_gate.ts";

/** The daemon's `PRAGMA busy_timeout` (lib/store.ts): how long a write, and the open, wait for another lock. */
import { BUSY_TIMEOUT_MS } from "../../lib/store.ts";
export { BUSY_TIMEOUT_MS, OPEN_BUSY_TIMEOUT_MS } from "../../lib/store.ts";

/**
 * The stated bound on the slowest REST read while the lock is held: one busy-timeout stall (after it the write
 * gate refuses writes without waiting), plus what a read costs on a loaded 2-core machine. Before the gate every
 * writer waited 5 s on its own and a read took 15 s.
 */
export const READ_BOUND_MS = BUSY_TIMEOUT_MS + 500;

/** A process holding an exclusive transaction on `dbPath` until `release()`. */
async function lock(dbPath: string) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("_locker.ts", import.meta.url).pathname, dbPath],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const first = await lines.read();
  if (!first.value?.includes("locked")) throw new Error("the locker process did not take the lock");
  return {
    async release() {
      await child.stdin.close();
      await lines.read().catch(() => {});
      lines.releaseLock();
      await child.stdout.cancel().catch(() => {});
      await child.status;
    },
  };
}

export interface LockedStartResult {
  code: number;
  line: string;
  seconds: number;
}

/** Start `main.ts` while another process holds the lock on an existing database. */
export async function lockedStart(): Promise<LockedStartResult> {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-faults-lock-start-" });
  try {
    await (await startDaemon({ dataDir: dir })).stop(); // an existing lvmh.db, as after any earlier run
    const held = await lock(`${dir}/lvmh.db`);
    const t0 = performance.now();
    const out = await runMainOnce({ LVMH_TOKEN: "faults-token-0123456789", LVMH_DATA_DIR: dir });
    const seconds = (performance.now() - t0) / 1000;
    await held.release();
    return { code: out.code, line: (out.stderr + out.stdout).trim(), seconds };
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/** The repair is releasing the lock. */
export interface LockedMidRunResult extends ScenarioEnd {
  plugins: number;
  /** How long the other process held the lock. */
  holdSeconds: number;
  /** From taking the lock until the first commit was refused: how long a write waited. */
  waitedSeconds: number;
  /** Of the failed commits, those that waited the busy timeout (the rest were refused at once by the gate). */
  waits: number;
  /** The slowest REST read answered while the lock was held (the event loop waits with a write). */
  slowestReadMs: number;
  /** REST reads of the session list made while the lock was held, and how many answered 200 with the list. */
  readsTried: number;
  readsOk: number;
}

/**
 * Stream with `plugins` plugins while another process holds the lock for at least `holdMs` (more than the busy
 * timeout, so that writes are refused) and until the witness socket was closed for a refused commit.
 */
export async function lockedMidRun(
  options: { plugins: number; holdMs: number },
): Promise<LockedMidRunResult> {
  const d = await startDaemon();
  const fleet = await startFleet(d, "locked", options.plugins);
  let w: ReturnType<typeof witness> | null = null;
  try {
    await waitFor(
      async () => (await sessions(d)).filter((s) => s.online).length === options.plugins,
      "every plugin online",
      30_000,
    );
    for (let i = 0; i < 5; i++) await fleet.round();
    w = witness(d, "locked-witness", 100);
    await waitFor(async () => (await allEvents(d, "locked-witness")).length > 0, "the witness streaming");

    const held = await lock(`${d.dataDir}/lvmh.db`);
    const t0 = performance.now();
    const locked = () => d.output().includes("database is locked");
    const waited = waitFor(locked, "a commit refused as locked", options.holdMs + 10_000)
      .then(() => (performance.now() - t0) / 1000);
    // Plugins keep working while the lock is held; a reader measures how long the daemon takes to answer.
    let slowestReadMs = 0, readsTried = 0, readsOk = 0;
    let reading = true;
    const reader = (async () => {
      while (reading) {
        const r0 = performance.now();
        const res = await d.api("/api/sessions");
        readsTried++;
        if (res.ok && Array.isArray(await res.json())) readsOk++;
        slowestReadMs = Math.max(slowestReadMs, performance.now() - r0);
      }
    })();
    // Held at least `holdMs`, and until the witness and one other socket were refused: which sockets' events
    // land in the first refused commit is a matter of timing; later ones are refused at once by the write gate.
    let witnessClosed = false;
    w.ended.then(() => witnessClosed = true);
    const enough = () =>
      performance.now() - t0 >= options.holdMs && witnessClosed &&
      refused(d.output(), "database is locked").sockets >= 2;
    while (!enough() && performance.now() - t0 < 60_000) await fleet.round();
    const holdSeconds = (performance.now() - t0) / 1000;
    const t1 = performance.now();
    await held.release();
    reading = false;
    await reader;
    const waitedSeconds = await waited.catch(() => NaN);
    const { end, output } = await finishScenario(
      d,
      fleet,
      { id: "locked-witness", w },
      "database is locked",
      {
        since: t1,
      },
    );
    const waits = end.failedCommits - refused(output, REFUSED_AT_ONCE).commits;
    return {
      plugins: options.plugins,
      holdSeconds,
      waitedSeconds,
      waits,
      ...end,
      slowestReadMs,
      readsTried,
      readsOk,
    };
  } finally {
    w?.stop();
    await fleet.stop();
    await d.stop();
  }
}
