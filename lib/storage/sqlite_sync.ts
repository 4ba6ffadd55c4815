/**
 * What the SQLite stores share in putting node:sqlite's synchronous calls behind the storage interfaces'
 * promises.
 */
import type { DatabaseSync } from "node:sqlite";

/** Run synchronous work as a promise: a throw becomes a rejection, as the async interface promises. */
export function settle<T>(work: () => T): Promise<T> {
  try {
    return Promise.resolve(work());
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * `work` in a write transaction of its own (`BEGIN IMMEDIATE`), or in the caller's when one is open on `db`
 * (the caller's then commits or rolls back both).
 */
export function writeTransaction<T>(db: DatabaseSync, work: () => T): T {
  if (db.isTransaction) return work();
  db.exec("BEGIN IMMEDIATE");
  try {
    const out = work();
    db.exec("COMMIT");
    return out;
  } catch (error) {
    if (db.isTransaction) db.exec("ROLLBACK");
    throw error;
  }
}
