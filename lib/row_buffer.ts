/**
 * Event rows that are surely new, inserted many per statement: one `INSERT` of 32 rows costs SQLite and the
 * node:sqlite binding far less than 32 of one row (measured here: 1.3–1.6× the rows per second), because each
 * statement run crosses into SQLite once and steps once.
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";

/** Rows per multi-row INSERT: past ~20 the gain flattens (and SQLite allows 32,766 parameters). */
export const ROWS_PER_INSERT = 32;
const COLUMNS = 5;

/** One transaction's new rows, inserted `ROWS_PER_INSERT` at a time; the rest one by one. */
export class RowBuffer {
  #args: (string | number)[] = [];
  #expected = 0;
  #inserted = 0;
  #one: StatementSync;
  #many: StatementSync;

  /**
   * @param one the one-row insert, `INSERT OR IGNORE INTO events(sessionId, seq, ts, type, payload) …`.
   * @param many the same for `ROWS_PER_INSERT` rows (`manyRowInsert`).
   */
  constructor(one: StatementSync, many: StatementSync) {
    this.#one = one;
    this.#many = many;
  }

  /** A row that no stored row can have the key of: inserted with others, counted when flushed. */
  add(sessionId: string, seq: number, ts: number, type: string, payload: string): void {
    this.#args.push(sessionId, seq, ts, type, payload);
    this.#expected++;
    if (this.#args.length === ROWS_PER_INSERT * COLUMNS) this.#runMany();
  }

  /**
   * A row that may already be stored (a replay): the rows waiting before it go first, then it alone.
   * @returns how many rows it added (0 when its key was there).
   */
  insertOne(sessionId: string, seq: number, ts: number, type: string, payload: string): number {
    this.flushRest();
    return Number(this.#one.run(sessionId, seq, ts, type, payload).changes);
  }

  /** @returns false when fewer rows went in than were added: one of them was stored already. */
  flush(): boolean {
    this.flushRest();
    return this.#inserted === this.#expected;
  }

  /** Insert what waits, fewer than `ROWS_PER_INSERT` rows, one by one. */
  flushRest(): void {
    const a = this.#args;
    for (let i = 0; i < a.length; i += COLUMNS) {
      this.#inserted += Number(this.#one.run(a[i], a[i + 1], a[i + 2], a[i + 3], a[i + 4]).changes);
    }
    this.#args = [];
  }

  #runMany(): void {
    this.#inserted += Number(this.#many.run(...this.#args).changes);
    this.#args = [];
  }
}

/** The insert of `ROWS_PER_INSERT` event rows in one statement. */
export function manyRowInsert(db: DatabaseSync): StatementSync {
  const values = Array.from({ length: ROWS_PER_INSERT }, () => "(?, ?, ?, ?, ?)").join(", ");
  return db.prepare(`INSERT OR IGNORE INTO events(sessionId, seq, ts, type, payload) VALUES ${values}`);
}
