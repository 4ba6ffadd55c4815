/**
 * Fault row: the disk fills up mid-run. The data dir is a small tmpfs (root only: it mounts one), a filler file
 * leaves a little room, and real plugin instances stream until SQLite answers "database or disk is full". The
 * daemon must close the sockets whose events it could not commit without acking them, stay up and keep
 * answering reads; a hand-written plugin socket records every ack, and SQLite must hold every acked seq. Then
 * the filler is deleted and the plugins' replay must leave every session's seqs complete and unique.
 */
import { startDaemon, waitFor } from "../../testing/daemon.ts";
import { allEvents, sessions } from "../../testing/pi.ts";
import { finishScenario, type ScenarioEnd, startFleet } from "./_fleet.ts";
import { witness } from "./_witness.ts";

/** The repair is deleting the filler. */
export interface DiskFullResult extends ScenarioEnd {
  plugins: number;
  tmpfsMiB: number;
  /** Room left by the filler file when streaming started. */
  freeKiB: number;
  /** Rounds (one message from each plugin) until the first failed commit. */
  roundsBeforeFull: number;
  /** REST reads answered 200 while the disk was full, of those tried. */
  readsOk: number;
  readsTried: number;
}

const MESSAGE_PAD = 2000;

/** Run the row with `plugins` plugins and `freeKiB` of room on the tmpfs once they stream. */
export async function diskFull(options: { plugins: number; freeKiB: number }): Promise<DiskFullResult> {
  if (Deno.uid() !== 0) throw new Error("The disk-full row mounts a tmpfs: run it as root");
  const tmpfsMiB = 256;
  const dir = await Deno.makeTempDir({ prefix: "lvmh-faults-full-" });
  const sh = (args: string[]) => new Deno.Command(args[0], { args: args.slice(1) }).output();
  if ((await sh(["mount", "-t", "tmpfs", "-o", `size=${tmpfsMiB}m`, "tmpfs", dir])).code !== 0) {
    throw new Error(`Cannot mount a tmpfs on ${dir}`);
  }
  const filler = `${dir}/filler`;
  const d = await startDaemon({ dataDir: dir });
  const fleet = await startFleet(d, "full", options.plugins);
  let w: ReturnType<typeof witness> | null = null;
  try {
    await waitFor(
      async () => (await sessions(d)).filter((s) => s.online).length === options.plugins,
      "every plugin online",
      30_000,
    );
    for (let i = 0; i < 3; i++) await fleet.round(MESSAGE_PAD);
    // The witness has acks on record before the disk fills, so "every acked seq stored" says something.
    w = witness(d, "full-witness", MESSAGE_PAD);
    await waitFor(async () => (await allEvents(d, "full-witness")).length >= 5, "the witness streaming");
    await fill(filler, dir, options.freeKiB * 1024);
    const isFull = () => d.output().includes("database or disk is full");
    let rounds = 0;
    while (!isFull() && rounds < 5000) rounds++, await fleet.round(MESSAGE_PAD);
    if (!isFull()) throw new Error(`the disk never filled up:\n${d.output()}`);

    // Full: plugins keep working (their events wait in their buffers) while reads must still be answered.
    let readsOk = 0, readsTried = 0;
    const fullUntil = Date.now() + 1500;
    while (Date.now() < fullUntil) {
      await fleet.round(MESSAGE_PAD);
      for (const path of ["/api/sessions", `/api/sessions/${fleet.ids[0]}/events?after=0&limit=50`]) {
        readsTried++;
        const res = await d.api(path);
        await res.body?.cancel();
        if (res.status === 200) readsOk++;
      }
    }
    // The repair: the filler goes, and the plugins' replay must store everything.
    const { end } = await finishScenario(d, fleet, { id: "full-witness", w }, "database or disk is full", {
      run: () => Deno.remove(filler),
    });
    return {
      plugins: options.plugins,
      tmpfsMiB,
      freeKiB: options.freeKiB,
      roundsBeforeFull: rounds,
      ...end,
      readsOk,
      readsTried,
    };
  } finally {
    w?.stop();
    await fleet.stop();
    await d.stop();
    await sh(["umount", "-l", dir]);
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/** Write zeros to `path` until the filesystem of `dir` has only `leave` bytes available. */
async function fill(path: string, dir: string, leave: number): Promise<void> {
  const out = await new Deno.Command("df", { args: ["-B1", "--output=avail", dir] }).output();
  const avail = Number(new TextDecoder().decode(out.stdout).trim().split("\n").pop());
  let todo = avail - leave;
  const chunk = new Uint8Array(1 << 20);
  using f = await Deno.open(path, { write: true, create: true });
  try {
    while (todo > 0) todo -= await f.write(chunk.subarray(0, Math.min(chunk.length, todo)));
  } catch (error) {
    // The daemon writes meanwhile (the witness streams), so the room may run out first: full is full.
    if (!/os error 28/.test(String(error))) throw error; // ENOSPC
  }
}
