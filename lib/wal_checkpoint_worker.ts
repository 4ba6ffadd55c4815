/**
 * The worker thread of lib/wal_checkpointer.ts: its own connection to the daemon's file, checkpointing the WAL
 * when the log holds frames not yet copied into the database. SQLite lets a checkpoint run beside a writer
 * (PASSIVE: no lock a writer needs is held), so the daemon's event loop never waits for one.
 */
import { DatabaseSync, type StatementSync } from "node:sqlite";
import type { CheckpointerFrame, CheckpointerStart } from "./wal_checkpointer.ts";

let db: DatabaseSync | null = null;
let index: WalIndex | null = null;
let timer: ReturnType<typeof setInterval> | undefined;

const post = (frame: CheckpointerFrame) => self.postMessage(frame);

self.onmessage = (e: MessageEvent<CheckpointerStart | "close">) => {
  if (e.data === "close") {
    clearInterval(timer);
    try {
      index?.close();
      db?.close();
    } finally {
      // Not `self.close()`: a message posted just before it may never arrive (denoland/deno#11526), and the
      // daemon waits for this one. It ends the thread once it has it.
      post({ type: "closed" });
    }
    return;
  }
  const { path, intervalMs, quietMs, busyFrames, maxFrames } = e.data;
  let checkpoint: StatementSync, shm: WalIndex;
  try {
    db = new DatabaseSync(path);
    // Never wait for a lock: a checkpoint that cannot run now runs on a later tick.
    db.exec("PRAGMA busy_timeout=0");
    checkpoint = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
    index = shm = new WalIndex(`${path}-shm`);
  } catch (error) {
    post({ type: "failed", message: (error as Error).message });
    return;
  }
  let lastAt = -Infinity;
  /** The failure of the last tick: a full disk fails every tick, and is told once, as is its end. */
  let failing = "";
  timer = setInterval(() => {
    try {
      const wal = shm.read();
      // Past its bound the log starts over only once the daemon has copied the rest: asked at every look, not
      // only after a checkpoint of this worker, which the spacing below may put off.
      if (wal && wal.frames >= maxFrames) post({ type: "over", log: wal.frames });
      const pending = wal ? wal.frames - wal.copied : Infinity;
      // Nothing new costs this one read a tick. A trickle of commits (a session streaming) is copied once per
      // `quietMs`, not on every tick, since each checkpoint fsyncs both files; a burst, on every tick.
      if (pending <= 0 || (pending < busyFrames && performance.now() - lastAt < quietMs)) return;
      // `log` counts the frames since the log last started over, copied or not: it only starts over when a
      // write begins with every frame copied, which writes arriving while the copy runs keep from happening.
      const { log } = checkpoint.get() as { log: number };
      lastAt = performance.now();
      if (failing) post({ type: "recovered" });
      failing = "";
      if (!wal && log >= maxFrames) post({ type: "over", log });
    } catch (error) {
      const message = (error as Error).message;
      // Another checkpoint running (the daemon finishing one, a sqlite3 shell) is not a failure.
      if (/database is locked|database is busy/.test(message)) return;
      if (message !== failing) post({ type: "error", message });
      failing = message;
    }
  }, intervalMs);
};

/**
 * The log's length and how much of it is copied, read from the wal-index header that SQLite keeps at the start
 * of the `-shm` file (https://www.sqlite.org/walformat.html, "The WAL-Index Header" and "The Checkpoint
 * Information"): mxFrame at byte 16, nBackfill at byte 96, in the machine's byte order. It is read without a
 * lock: a torn read only moves a checkpoint by a tick.
 */
class WalIndex {
  #file: Deno.FsFile;
  #bytes = new Uint8Array(100);
  #view = new DataView(this.#bytes.buffer);

  constructor(path: string) {
    this.#file = Deno.openSync(path, { read: true });
  }

  /** @returns null when the header is not there as described (then every tick checkpoints, as before). */
  read(): { frames: number; copied: number } | null {
    this.#file.seekSync(0, Deno.SeekMode.Start);
    if (this.#file.readSync(this.#bytes) !== this.#bytes.length) return null;
    // iVersion, 3007000 in every SQLite 3, tells the byte order.
    const little = this.#view.getUint32(0, true) === WAL_INDEX_VERSION;
    if (!little && this.#view.getUint32(0, false) !== WAL_INDEX_VERSION) return null;
    return { frames: this.#view.getUint32(16, little), copied: this.#view.getUint32(96, little) };
  }

  close(): void {
    this.#file.close();
  }
}
const WAL_INDEX_VERSION = 3007000;
