/**
 * The command queue in the daemon's SQLite file. One daemon owns the file, so the wake-up is an in-process call
 * to every queue on the same handle, after the commit; the sweep (a read of the partial index of commands
 * nobody took) stays as the backstop the contract promises, and finds rows another process wrote.
 *
 * Holder epochs live in the SQLite event log's memory, so the fence is the log's own check: an empty append
 * stores nothing and refuses a stale epoch or an unknown session. node:sqlite is synchronous and that log's
 * promises are settled when returned, so between the check and this queue's write only continuations queued
 * earlier can run; a `claimHolder` that comes in there is observed by its caller after the write, which is then
 * as if it had happened just before the claim.
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import { sessionNotFound } from "../errors.ts";
import { gateOf, type WriteGate } from "../write_gate.ts";
import type { EventLog } from "./event_log.ts";
import {
  type CommandFrame,
  type CommandQueue,
  type CommandsHint,
  commandText,
  type Holder,
  type QueuedCommand,
  SWEEP_MS,
  TAKE_LIMIT,
  Wakeups,
} from "./command_queue.ts";
import { settle, writeTransaction } from "./sqlite_sync.ts";

// Commands go with their session: the trigger does what a foreign key's cascade does on PostgreSQL (the
// store's file does not enforce foreign keys). `takenEpoch` -1: taken by a holder of an earlier daemon process.
const SCHEMA = `
CREATE TABLE IF NOT EXISTS commands(
  sessionId TEXT NOT NULL, pos INTEGER NOT NULL, frame TEXT NOT NULL, enqueuedAt INTEGER NOT NULL,
  takenEpoch INTEGER, ackedAt INTEGER, PRIMARY KEY(sessionId, pos));
CREATE INDEX IF NOT EXISTS commands_waiting ON commands(sessionId, pos) WHERE ackedAt IS NULL;
CREATE INDEX IF NOT EXISTS commands_acked ON commands(ackedAt) WHERE ackedAt IS NOT NULL;
CREATE TABLE IF NOT EXISTS command_counters(sessionId TEXT PRIMARY KEY, lastPos INTEGER NOT NULL);
CREATE TRIGGER IF NOT EXISTS commands_follow_session AFTER DELETE ON sessions BEGIN
  DELETE FROM commands WHERE sessionId = OLD.id;
  DELETE FROM command_counters WHERE sessionId = OLD.id;
END;
`;

/** Every queue on a handle, for the in-process hint. */
const queuesOf = new WeakMap<DatabaseSync, Set<Wakeups>>();
/** Handles whose earlier processes' takes were marked as such (once per handle, before any take of ours). */
const opened = new WeakSet<DatabaseSync>();

interface Row {
  pos: number;
  frame: string;
  enqueuedAt: number;
  takenEpoch: number | null;
}

/** The command queue on a SQLite handle shared with the daemon's `Store` (which stays its owner). */
export class SqliteCommandQueue implements CommandQueue {
  readonly kind = "sqlite";
  #db: DatabaseSync;
  #log: Pick<EventLog, "append">;
  #gate: WriteGate;
  #wakeups: Wakeups;
  #exists: StatementSync;
  #count: StatementSync;
  #insert: StatementSync;
  #waiting: StatementSync;
  #mark: StatementSync;
  #ack: StatementSync;
  #untaken: StatementSync;

  /**
   * @param db the store's handle (`store.db`): the `sessions` table is there.
   * @param log the event log whose `claimHolder` gives holders their epochs.
   */
  constructor(db: DatabaseSync, log: Pick<EventLog, "append">, options: { sweepMs?: number } = {}) {
    this.#db = db;
    this.#log = log;
    this.#gate = gateOf(db);
    db.exec(SCHEMA);
    if (!opened.has(db)) {
      opened.add(db);
      // Epochs restart with the process: a take recorded by the previous one must not look like this one's.
      this.#gate.run(() =>
        db.exec("UPDATE commands SET takenEpoch = -1 WHERE ackedAt IS NULL AND takenEpoch IS NOT NULL")
      );
    }
    this.#exists = db.prepare("SELECT 1 AS x FROM sessions WHERE id = ?");
    this.#count = db.prepare(
      `INSERT INTO command_counters(sessionId, lastPos) VALUES (?, 1)
        ON CONFLICT(sessionId) DO UPDATE SET lastPos = lastPos + 1 RETURNING lastPos`,
    );
    this.#insert = db.prepare("INSERT INTO commands(sessionId, pos, frame, enqueuedAt) VALUES (?, ?, ?, ?)");
    this.#waiting = db.prepare(
      `SELECT pos, frame, enqueuedAt, takenEpoch FROM commands
        WHERE sessionId = ? AND ackedAt IS NULL AND takenEpoch IS NOT ? ORDER BY pos LIMIT ?`,
    );
    this.#mark = db.prepare(
      "UPDATE commands SET takenEpoch = ? WHERE sessionId = ? AND pos >= ? AND pos <= ? AND ackedAt IS NULL",
    );
    this.#ack = db.prepare(
      `UPDATE commands SET ackedAt = ? WHERE sessionId = ? AND takenEpoch = ? AND ackedAt IS NULL
        AND pos IN (SELECT value FROM json_each(?))`,
    );
    this.#untaken = db.prepare(
      "SELECT DISTINCT sessionId FROM commands WHERE ackedAt IS NULL AND takenEpoch IS NULL LIMIT 1000",
    );
    this.#wakeups = new Wakeups(
      () => settle(() => (this.#untaken.all() as { sessionId: string }[]).map((r) => r.sessionId)),
      options.sweepMs ?? SWEEP_MS,
    );
    let queues = queuesOf.get(db);
    if (!queues) queuesOf.set(db, queues = new Set());
    queues.add(this.#wakeups);
  }

  enqueue(sessionId: string, frame: CommandFrame): Promise<QueuedCommand> {
    return settle(() => {
      const text = commandText(sessionId, frame);
      if (!this.#exists.get(sessionId)) throw sessionNotFound(sessionId);
      const enqueuedAt = Date.now();
      const pos = this.#transaction(() => {
        const { lastPos } = this.#count.get(sessionId) as { lastPos: number };
        this.#insert.run(sessionId, lastPos, text, enqueuedAt);
        return lastPos;
      });
      // Committed: now tell this daemon's holders, once the caller has its answer.
      for (const wakeups of queuesOf.get(this.#db) ?? []) queueMicrotask(() => wakeups.hint(sessionId));
      return { sessionId, pos, frame, enqueuedAt, redelivered: false };
    });
  }

  async take(sessionId: string, holder: Holder, limit = TAKE_LIMIT): Promise<QueuedCommand[]> {
    await this.#log.append(sessionId, [], holder);
    return this.#transaction(() => {
      const rows = this.#waiting.all(sessionId, holder.epoch, limit) as unknown as Row[];
      if (rows.length) this.#mark.run(holder.epoch, sessionId, rows[0].pos, rows.at(-1)!.pos);
      return rows.map((r) => ({
        sessionId,
        pos: r.pos,
        frame: JSON.parse(r.frame) as CommandFrame,
        enqueuedAt: r.enqueuedAt,
        redelivered: r.takenEpoch !== null,
      }));
    });
  }

  async ack(sessionId: string, holder: Holder, positions: readonly number[]): Promise<number> {
    await this.#log.append(sessionId, [], holder);
    if (!positions.length) return 0;
    const list = JSON.stringify(positions);
    return this.#gate.run(() => Number(this.#ack.run(Date.now(), sessionId, holder.epoch, list).changes));
  }

  unacknowledged(sessionId: string): Promise<number> {
    return settle(() =>
      (this.#db.prepare("SELECT count(*) AS n FROM commands WHERE sessionId = ? AND ackedAt IS NULL")
        .get(sessionId) as { n: number }).n
    );
  }

  subscribe(onSessionHasCommands: CommandsHint): () => void {
    return this.#wakeups.add(onSessionHasCommands);
  }

  prune(before: number): Promise<number> {
    return settle(() =>
      this.#gate.run(() =>
        Number(
          this.#db.prepare("DELETE FROM commands WHERE ackedAt IS NOT NULL AND ackedAt < ?").run(before)
            .changes,
        )
      )
    );
  }

  close(): Promise<void> {
    this.#wakeups.stop();
    queuesOf.get(this.#db)?.delete(this.#wakeups);
    return Promise.resolve();
  }

  /** One write transaction through the file's gate (joining the caller's when one is open). */
  #transaction<T>(work: () => T): T {
    return this.#gate.run(() => writeTransaction(this.#db, work));
  }
}
