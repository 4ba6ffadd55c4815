/**
 * Usage runs in the daemon's SQLite file, on the table lib/usage_runs.ts makes and owns (construct this after
 * it: one schema). The guard on `seenSeq` is an upsert's WHERE, as on PostgreSQL.
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import { gateOf, type WriteGate } from "../write_gate.ts";
import type { RunRow, UsageRunLog } from "./usage_run_log.ts";
import { runParams } from "../usage_count.ts";
import { settle } from "./sqlite_sync.ts";

const RUN_COLUMNS =
  "sessionId, startSeq, startedAt, person, model, inputTokens, outputTokens, cost, counted, open";

/** The usage run log on the daemon's SQLite handle. */
export class SqliteUsageRunLog implements UsageRunLog {
  readonly kind = "sqlite";
  #db: DatabaseSync;
  #gate: WriteGate;
  #seen: StatementSync;
  #seenOf: StatementSync;
  #openOf: StatementSync;
  #put: StatementSync;
  #range: StatementSync;
  #delete: StatementSync;

  constructor(db: DatabaseSync) {
    this.#db = db;
    this.#gate = gateOf(db);
    this.#seen = db.prepare("SELECT sessionId, MAX(seenSeq) AS seq FROM usage_runs GROUP BY sessionId");
    this.#seenOf = db.prepare("SELECT MAX(seenSeq) AS seq FROM usage_runs WHERE sessionId = ?");
    this.#openOf = db.prepare(
      `SELECT ${RUN_COLUMNS} FROM usage_runs WHERE sessionId = ? AND open = 1 ORDER BY startSeq DESC LIMIT 1`,
    );
    this.#put = db.prepare(
      `INSERT INTO usage_runs(${RUN_COLUMNS}, seenSeq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT(sessionId, startSeq) DO UPDATE SET startedAt = excluded.startedAt, person = excluded.person,
         model = excluded.model, inputTokens = excluded.inputTokens, outputTokens = excluded.outputTokens,
         cost = excluded.cost, counted = excluded.counted, open = excluded.open, seenSeq = excluded.seenSeq
       WHERE usage_runs.seenSeq <= excluded.seenSeq`,
    );
    this.#range = db.prepare(`SELECT ${RUN_COLUMNS} FROM usage_runs WHERE startedAt >= ? AND startedAt < ?`);
    this.#delete = db.prepare("DELETE FROM usage_runs WHERE sessionId = ?");
  }

  seen(): Promise<Map<string, number>> {
    return settle(() => {
      const out = new Map<string, number>();
      for (const r of this.#seen.all() as { sessionId: string; seq: number }[]) out.set(r.sessionId, r.seq);
      return out;
    });
  }

  seenOf(sessionId: string): Promise<number | null> {
    return settle(() => (this.#seenOf.get(sessionId) as { seq: number | null }).seq);
  }

  openRun(sessionId: string): Promise<RunRow | null> {
    return settle(() => {
      const row = this.#openOf.get(sessionId) as RunRow | undefined;
      return row ? { ...row } : null;
    });
  }

  put(rows: readonly RunRow[], seen: ReadonlyMap<string, number>): Promise<number> {
    return settle(() => {
      if (!rows.length) return 0;
      return this.#gate.run(() => {
        // A savepoint: inside a caller's transaction too, as the other logs on this handle write.
        this.#db.exec("SAVEPOINT usage_run_log");
        try {
          let written = 0;
          for (const c of rows) {
            written += Number(this.#put.run(...runParams(c, seen.get(c.sessionId) ?? 0)).changes);
          }
          this.#db.exec("RELEASE usage_run_log");
          return written;
        } catch (error) {
          this.#db.exec("ROLLBACK TO usage_run_log");
          this.#db.exec("RELEASE usage_run_log");
          throw error;
        }
      });
    });
  }

  range(from: number, to: number): Promise<RunRow[]> {
    return settle(() => (this.#range.all(from, to) as unknown as RunRow[]).map((r) => ({ ...r })));
  }

  deleteSession(sessionId: string): Promise<void> {
    return settle(() => void this.#gate.run(() => this.#delete.run(sessionId)));
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
