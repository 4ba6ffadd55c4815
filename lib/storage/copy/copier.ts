/**
 * Copying the daemon's SQLite file into the PostgreSQL schema, one copier per kind of state. A copier names the
 * SQLite tables it reads and the Postgres tables it needs, copies inside the caller's transaction and says which
 * counts prove the copy (most through `copyTable`, table_copy.ts).
 */
import type { DatabaseSync, SQLInputValue } from "node:sqlite";
import type postgres from "postgres";
import type { Sql } from "../pg_client.ts";

/** A transaction on the target. */
export type Tx = postgres.TransactionSql;

/** A number both sides must agree on after the copy. */
export interface Check {
  /** What is counted, as printed (a table name, or e.g. "events: last seq per session"). */
  label: string;
  sqlite(src: DatabaseSync): number;
  pg(sql: Sql): Promise<number>;
  /**
   * Equality beyond the printed number (e.g. every session's last seq, not only their sum); by default the two
   * numbers are compared.
   */
  same?(src: DatabaseSync, sql: Sql): Promise<boolean>;
}

/** One kind of state. */
export interface Copier {
  kind: string;
  /** SQLite tables this copier reads or knowingly leaves behind (claims and leases of the stopped daemon). */
  sqliteTables: string[];
  /** Postgres tables it writes: when one is missing from the migrated schema the kind is "not copied". */
  pgTables: string[];
  copy(src: DatabaseSync, tx: Tx): Promise<void>;
  checks: Check[];
}

/** Rows per multi-row INSERT: under PostgreSQL's 65,535 parameters for the widest table (17 columns). */
export const BATCH_ROWS = 1_000;

/** A SQLite table's columns (none when the table is missing). */
export function sqliteColumns(src: DatabaseSync, table: string): string[] {
  return (src.prepare(`PRAGMA table_info(${quoteId(table)})`).all() as { name: string }[]).map((c) => c.name);
}

/** Whether the SQLite file has `table`. */
export function sqliteHas(src: DatabaseSync, table: string): boolean {
  return src.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table) !==
    undefined;
}

/** A single number from SQLite (0 for a missing table, so a file from an older release still counts). */
export function sqliteNumber(src: DatabaseSync, query: string, ...params: SQLInputValue[]): number {
  const row = src.prepare(query).get(...params) as Record<string, unknown> | undefined;
  return Number(row ? Object.values(row)[0] ?? 0 : 0);
}

/** `SELECT count(*)` on both sides of one table pair. */
export function countCheck(from: string, to = from): Check {
  return {
    label: to,
    sqlite: (src) => sqliteHas(src, from) ? sqliteNumber(src, `SELECT count(*) FROM ${quoteId(from)}`) : 0,
    pg: async (sql) => Number((await sql.unsafe(`SELECT count(*)::bigint AS n FROM ${quoteId(to)}`))[0].n),
  };
}

/** An SQL identifier, quoted. */
export function quoteId(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
