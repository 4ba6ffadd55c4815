/**
 * The worker thread of lib/wal_checkpointer.ts: its own connection to the daemon's file, checkpointing the WAL
 * whenever another connection committed since the last look. SQLite lets a checkpoint run beside a writer
 * (PASSIVE: no lock a writer needs is held), so the daemon's event loop never waits for one.
 */
import { DatabaseSync, type StatementSync } from "node:sqlite";
import type { CheckpointerFrame, CheckpointerStart } from "./wal_checkpointer.ts";

let db: DatabaseSync | null = null;
let timer: ReturnType<typeof setInterval> | undefined;

const post = (frame: CheckpointerFrame) => self.postMessage(frame);

self.onmessage = (e: MessageEvent<CheckpointerStart | "close">) => {
  if (e.data === "close") {
    clearInterval(timer);
    try {
      db?.close();
    } finally {
      post({ type: "closed" });
      self.close();
    }
    return;
  }
  const { path, intervalMs, maxFrames } = e.data;
  let version: StatementSync, checkpoint: StatementSync;
  try {
    db = new DatabaseSync(path);
    // Never wait for a lock: a checkpoint that cannot run now runs on a later tick.
    db.exec("PRAGMA busy_timeout=0");
    version = db.prepare("PRAGMA data_version");
    checkpoint = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
  } catch (error) {
    post({ type: "failed", message: (error as Error).message });
    return self.close();
  }
  let seen = -1;
  /** The failure of the last tick: a full disk fails every tick, and is told once, as is its end. */
  let failing = "";
  timer = setInterval(() => {
    try {
      // data_version moves when another connection committed: an idle daemon costs this one query a tick.
      const now = (version.get() as { data_version: number }).data_version;
      if (now === seen) return;
      seen = now;
      // `log` counts the frames since the log last started over, copied or not: it only starts over when a
      // write begins with every frame copied, which writes arriving while the copy runs keep from happening.
      const { log } = checkpoint.get() as { log: number };
      if (failing) post({ type: "recovered" });
      failing = "";
      if (log >= maxFrames) post({ type: "over", log });
    } catch (error) {
      seen = -1; // try again next tick, commits or not
      const message = (error as Error).message;
      // Another checkpoint running (the daemon finishing one, a sqlite3 shell) is not a failure.
      if (/database is locked|database is busy/.test(message)) return;
      if (message !== failing) post({ type: "error", message });
      failing = message;
    }
  }, intervalMs);
};
