/**
 * The audit log in the daemon's SQLite file, over lib/audit.ts (the one schema of the `audit` table; its
 * AUTOINCREMENT ids are assigned under the file's single writer lock, so they commit in order).
 */
import type { DatabaseSync } from "node:sqlite";
import { AuditStore } from "../audit.ts";
import { type AuditEntry, type AuditInput, type AuditLog, MAX_PAGE } from "./audit_log.ts";

/** The audit log on a SQLite handle shared with the daemon's `Store` (which stays its owner). */
export class SqliteAuditLog implements AuditLog {
  readonly kind = "sqlite";
  #audit: AuditStore;

  constructor(db: DatabaseSync) {
    this.#audit = new AuditStore(db);
  }

  append(entry: AuditInput): Promise<void> {
    // Audit.append never throws: it logs a refused write and drops the row.
    this.#audit.append(entry);
    return Promise.resolve();
  }

  page(after: number, limit: number): Promise<AuditEntry[]> {
    try {
      return Promise.resolve(this.#audit.page(after, Math.min(limit, MAX_PAGE)));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
