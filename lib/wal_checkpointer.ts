/**
 * WAL checkpoints off the event loop. SQLite's automatic checkpoint runs inside the COMMIT that crosses 1,000
 * pages of log: it copies ~4 MB into the database file and fsyncs it, and node:sqlite being synchronous, the
 * whole daemon waits (11–16 ms each, 10 ms of it the fsync; every ~9,000 events under ingest). Here the main
 * connection never checkpoints; a worker thread with its own connection does, beside the writes.
 *
 * The log can only start over when a write begins with every frame of it copied, which a checkpoint running
 * beside continuous writes never achieves. So the log is bounded: past `maxFrames` the main connection
 * checkpoints what the worker has not copied yet (little: the worker copies as it goes), with no write in
 * between, and the next write starts the log over. That is one short stall per ~64 MB written in a burst that
 * never pauses, where automatic checkpoints made one per 4 MB.
 */
import type { DatabaseSync } from "node:sqlite";

/** How the log is kept; tests shrink every bound. */
export interface CheckpointPolicy {
  /** How often the worker looks for new commits. */
  intervalMs: number;
  /** While the log stays short, checkpoints are at least this far apart (each one fsyncs both files). */
  quietMs: number;
  /** A log this long at the last checkpoint (a burst) is checkpointed on every look instead. */
  busyFrames: number;
  /** Frames of log (pages of ~4 KB) past which the main connection finishes the checkpoint itself. */
  maxFrames: number;
  /** The size the log file is cut back to when it starts over (SQLite keeps it at its largest otherwise). */
  keepBytes: number;
}

export const DEFAULT_CHECKPOINT_POLICY: CheckpointPolicy = {
  intervalMs: 100,
  quietMs: 1000,
  busyFrames: 1000,
  maxFrames: 16_384,
  keepBytes: 16 * 1024 * 1024,
};
/** SQLite's default, restored when the worker cannot run. */
const AUTO_CHECKPOINT_PAGES = 1000;

/** What the daemon tells the worker first. */
export type CheckpointerStart = Omit<CheckpointPolicy, "keepBytes"> & { path: string };

/** What the worker tells the daemon. */
export type CheckpointerFrame =
  | { type: "over"; log: number }
  /** A checkpoint failed (told once until it fails otherwise or works again). */
  | { type: "error"; message: string }
  | { type: "recovered" }
  /** The worker could not open the file and has stopped. */
  | { type: "failed"; message: string }
  | { type: "closed" };

/** The worker that checkpoints one database file's WAL; `db` is the daemon's (only writing) connection. */
export class WalCheckpointer {
  #worker: Worker;
  #closed: Promise<void>;
  #db: DatabaseSync;

  constructor(
    db: DatabaseSync,
    path: string,
    policy: CheckpointPolicy = DEFAULT_CHECKPOINT_POLICY,
  ) {
    this.#db = db;
    db.exec(`PRAGMA journal_size_limit=${policy.keepBytes}; PRAGMA wal_autocheckpoint=0`);
    this.#worker = new Worker(new URL("./wal_checkpoint_worker.ts", import.meta.url), { type: "module" });
    const { promise, resolve } = Promise.withResolvers<void>();
    this.#closed = promise;
    const stopped = (why: string) => {
      console.error(`lvmh: the WAL checkpoint worker stopped (${why}); checkpoints are automatic again`);
      this.#automatic();
      resolve();
    };
    this.#worker.onmessage = (e: MessageEvent<CheckpointerFrame>) => {
      const frame = e.data;
      switch (frame.type) {
        case "over":
          return this.#finish();
        case "error":
          return console.error(`lvmh: WAL checkpoint failed: ${frame.message}; trying again`);
        case "recovered":
          return console.error("lvmh: WAL checkpoints work again");
        case "failed":
          return stopped(frame.message);
        case "closed":
          return resolve();
      }
    };
    this.#worker.onerror = (e) => {
      e.preventDefault();
      stopped(e.message);
    };
    const { keepBytes: _, ...start } = policy;
    this.#worker.postMessage({ ...start, path } satisfies CheckpointerStart);
  }

  /** Copy the rest of the log on this connection, with no write beside it, so the next write starts it over. */
  #finish(): void {
    try {
      this.#db.exec("PRAGMA wal_checkpoint(PASSIVE)");
    } catch {
      // The worker's own checkpoint holds the lock, or the disk is full (which the worker reports): the worker
      // asks again on its next tick while the log is over its bound.
    }
  }

  #automatic(): void {
    try {
      if (this.#db.isOpen) this.#db.exec(`PRAGMA wal_autocheckpoint=${AUTO_CHECKPOINT_PAGES}`);
    } catch { /* closing */ }
  }

  /** Stop the worker (its connection closed first); the daemon's connection then checkpoints on its own close. */
  async close(): Promise<void> {
    this.#worker.postMessage("close");
    await this.#closed;
    this.#worker.terminate();
    this.#automatic();
  }
}
