/**
 * Merge request records in the daemon's SQLite file, over lib/merge_request_record.ts (its table, upgrades and
 * statements: the one schema). node:sqlite is synchronous and the daemon is the file's only writer, so a
 * compare and its write, made with nothing awaited in between, are as one conditional write.
 */
import type { DatabaseSync } from "node:sqlite";
import { MergeRequestTable } from "../merge_request_record.ts";
import type { MergeRequestLog, Push, Row, Save } from "./merge_request_log.ts";
import { settle } from "./sqlite_sync.ts";

/** A save's own writes, on the store's handle inside the save's savepoint (no transaction of their own). */
export type SqliteSaveWrites = (db: DatabaseSync) => void;

/** The merge request log on a SQLite handle shared with the daemon's `Store` (which stays its owner). */
export class SqliteMergeRequestLog implements MergeRequestLog<SqliteSaveWrites> {
  readonly kind = "sqlite";
  #db: DatabaseSync;
  #table: MergeRequestTable;

  constructor(db: DatabaseSync) {
    this.#db = db;
    this.#table = new MergeRequestTable(db);
  }

  row(sessionId: string): Promise<Row | null> {
    return settle(() => this.#row(sessionId));
  }

  all(): Promise<Row[]> {
    return settle(() => this.#table.all().map((row) => ({ ...row })));
  }

  updateIf(sessionId: string, expectedSha: string | null, push: Push, now: number): Promise<boolean> {
    return settle(() => {
      if ((this.#row(sessionId)?.pushedSha ?? null) !== expectedSha) return false;
      this.#table.pushed(sessionId, push.repo, push.sourceBranch, push.sha, now);
      return true;
    });
  }

  saveIf(sessionId: string, seen: Row, next: Save, also?: SqliteSaveWrites): Promise<boolean> {
    return settle(() => {
      const row = this.#row(sessionId);
      if (!row || !sameMarks(row, seen)) return false;
      // A savepoint, as the daemon writes a record: inside a caller's transaction too.
      this.#db.exec("SAVEPOINT merge_request_log");
      try {
        this.#table.save(sessionId, next.fields, next.updatedAt, next.refreshedAt);
        this.#table.marks(sessionId, next.marks.notified, next.marks.prompted, next.marks.prompts);
        also?.(this.#db);
        this.#db.exec("RELEASE merge_request_log");
      } catch (error) {
        this.#db.exec("ROLLBACK TO merge_request_log");
        this.#db.exec("RELEASE merge_request_log");
        throw error;
      }
      return true;
    });
  }

  delete(sessionId: string): Promise<void> {
    return settle(() => this.#table.delete(sessionId));
  }

  due(before: number, limit: number): Promise<string[]> {
    return settle(() => this.#table.due(before, limit));
  }

  postpone(sessionId: string, now: number): Promise<void> {
    return settle(() => this.#table.postpone(sessionId, now));
  }

  byBranch(repo: string, branch: string): Promise<string[]> {
    return settle(() => this.#table.byBranch(repo, branch));
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  /** node:sqlite rows have no prototype: a plain copy, as the PostgreSQL log returns. */
  #row(sessionId: string): Row | null {
    const row = this.#table.row(sessionId);
    return row ? { ...row } : null;
  }
}

/** Whether a record still has the read time and marks a save was computed from. */
export function sameMarks(row: Row, seen: Row): boolean {
  return row.refreshedAt === seen.refreshedAt && row.pipelineNotified === seen.pipelineNotified &&
    row.pipelinePrompted === seen.pipelinePrompted && row.pipelinePrompts === seen.pipelinePrompts;
}
