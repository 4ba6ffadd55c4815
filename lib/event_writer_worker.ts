/**
 * The worker thread of lib/event_writer.ts: its own connection to the daemon's file, running the SQL of planned
 * batches (lib/batch_plan.ts) one at a time. Each outcome is written to the shared signal before it is posted,
 * so the daemon can also wait for it synchronously.
 */
import { DatabaseSync } from "node:sqlite";
import { manyRowInsert, RowBuffer } from "./row_buffer.ts";
import { BUSY_TIMEOUT_MS } from "./write_gate.ts";
import { type WriterFrame, writerSignal, type WriterStart, WriteStatus } from "./event_writer.ts";
import type { BatchSql } from "./batch_plan.ts";

let writer: ((sql: BatchSql) => void) | null = null;
let db: DatabaseSync | null = null;
let signal: ReturnType<typeof writerSignal> | null = null;

self.onmessage = (e: MessageEvent<WriterStart | WriterFrame | "close">) => {
  const message = e.data;
  if (message === "close") {
    try {
      db?.close();
    } finally {
      // Not `self.close()`: a message posted just before it may never arrive (denoland/deno#11526). The
      // daemon ends the thread once it has this one.
      self.postMessage({ closed: true });
    }
    return;
  }
  if ("path" in message) return start(message);
  const { id, sql } = message;
  let status: number = WriteStatus.stored, text = "";
  try {
    writer!(sql);
  } catch (error) {
    status = error instanceof RowsThere ? WriteStatus.rowsThere : WriteStatus.failed;
    text = (error as Error).message;
  }
  signal!.finish(id, status, text);
  self.postMessage({ id });
};

/** A row planned as new was in the file already: nothing was stored, and the daemon stores the batch itself. */
class RowsThere extends Error {}

function start({ path, buffer }: WriterStart): void {
  signal = writerSignal(buffer);
  try {
    db = new DatabaseSync(path);
    // As the daemon's connection: no fsync per commit in WAL, and checkpoints left to lib/wal_checkpointer.ts.
    db.exec(`PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=${BUSY_TIMEOUT_MS}; PRAGMA wal_autocheckpoint=0`);
    const one = db.prepare(
      "INSERT OR IGNORE INTO events(sessionId, seq, ts, type, payload) VALUES (?, ?, ?, ?, ?)",
    );
    const many = manyRowInsert(db);
    const state = db.prepare("UPDATE sessions SET lastSeq = ?, lastEventAt = ?, state = ? WHERE id = ?");
    const open = db;
    writer = ({ rows, states }) => {
      open.exec("BEGIN IMMEDIATE");
      try {
        const buffer = new RowBuffer(one, many);
        for (let i = 0; i < rows.length; i += 5) {
          buffer.add(
            rows[i] as string,
            rows[i + 1] as number,
            rows[i + 2] as number,
            rows[i + 3] as string,
            rows[i + 4] as string,
          );
        }
        if (!buffer.flush()) throw new RowsThere("a row planned as new was already stored");
        for (let i = 0; i < states.length; i += 4) {
          state.run(states[i], states[i + 1], states[i + 2], states[i + 3]);
        }
        open.exec("COMMIT");
      } catch (error) {
        if (open.isTransaction) open.exec("ROLLBACK");
        throw error;
      }
    };
    self.postMessage({ started: true });
  } catch (error) {
    self.postMessage({ failed: (error as Error).message });
  }
}
