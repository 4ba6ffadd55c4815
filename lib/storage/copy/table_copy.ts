/**
 * One SQLite table into one Postgres table. Most tables differ only in naming (camelCase on SQLite, snake_case
 * on Postgres), so columns are mapped by name against the Postgres table as it is at run time: a column added
 * to both by a later migration is copied without a change here.
 */
import type { DatabaseSync } from "node:sqlite";
import { Buffer } from "node:buffer";
import type postgres from "postgres";
import { BATCH_ROWS, quoteId, sqliteColumns, sqliteHas, type Tx } from "./copier.ts";

interface PgColumn {
  name: string;
  type: string;
  /** GENERATED ALWAYS AS IDENTITY: only written with OVERRIDING SYSTEM VALUE. */
  always: boolean;
}

async function pgColumns(tx: Tx, table: string): Promise<PgColumn[]> {
  const rows = await tx`SELECT column_name, data_type, identity_generation FROM information_schema.columns
    WHERE table_schema = current_schema() AND table_name = ${table} ORDER BY ordinal_position`;
  return rows.map((r) => ({
    name: r.column_name,
    type: r.data_type,
    always: r.identity_generation === "ALWAYS",
  }));
}

/** How one SQLite table goes into one Postgres table. */
export interface TableCopy {
  from: string;
  to: string;
  /**
   * A Postgres column's value as a SQLite expression over the source row, where the name alone does not say
   * (e.g. `only_row: "1"`); null leaves the column to its default.
   */
  columns?: Record<string, string | null>;
  /** The SQLite ORDER BY, where the insertion order sets an identity (a creation order). */
  orderBy?: string;
  /** SQLite columns knowingly left behind; any other column without a Postgres one stops the copy. */
  dropped?: string[];
}

/** snake_case of a camelCase SQLite column name. */
function snake(name: string): string {
  return name.replace(/[A-Z]/g, (c) => "_" + c.toLowerCase());
}

/** Postgres's value for a SQLite one, by the column's type. */
function convert(value: unknown, type: string): unknown {
  if (value === null || value === undefined) return null;
  if (type === "boolean") return Boolean(Number(value));
  if (type === "bytea") return Buffer.from(value as Uint8Array);
  if (typeof value === "bigint") return value.toString();
  return value;
}

/**
 * Copy every row of `spec.from` into `spec.to`, in batches of multi-row INSERTs. Identity columns written from
 * SQLite's values have their sequences moved past them, so rows made after the copy continue the numbering.
 * @returns the rows copied.
 */
export async function copyTable(src: DatabaseSync, tx: Tx, spec: TableCopy): Promise<number> {
  if (!sqliteHas(src, spec.from)) return 0;
  const have = new Map(sqliteColumns(src, spec.from).map((c) => [snake(c), c]));
  const targets: PgColumn[] = [];
  const exprs: string[] = [];
  for (const col of await pgColumns(tx, spec.to)) {
    const explicit = spec.columns && col.name in spec.columns ? spec.columns[col.name] : undefined;
    const expr = explicit !== undefined ? explicit : have.has(col.name) ? quoteId(have.get(col.name)!) : null;
    if (expr === null) continue;
    targets.push(col);
    exprs.push(`${expr} AS ${quoteId(col.name)}`);
  }
  // A SQLite column with nowhere to go would be lost without a word: refuse instead (the whole copy is one
  // transaction), until the schema or the copier says where it goes.
  const written = new Set(targets.map((c) => c.name));
  const lost = [...have].filter(([s, c]) => !written.has(s) && !spec.dropped?.includes(c)).map(([, c]) => c);
  if (lost.length) {
    throw new Error(`${spec.from}.${lost.join(", ")}: no column for it in Postgres's ${spec.to}`);
  }
  const order = spec.orderBy ? ` ORDER BY ${spec.orderBy}` : "";
  const select = src.prepare(`SELECT ${exprs.join(", ")} FROM ${quoteId(spec.from)}${order}`);
  const overriding = targets.some((c) => c.always) ? " OVERRIDING SYSTEM VALUE" : "";
  const head = `INSERT INTO ${quoteId(spec.to)}(${
    targets.map((c) => quoteId(c.name)).join(", ")
  })${overriding} VALUES `;
  let batch: unknown[][] = [];
  let copied = 0;
  const flush = async () => {
    if (batch.length === 0) return;
    const w = targets.length;
    const tuples = batch.map((_, i) => `(${targets.map((_, j) => `$${i * w + j + 1}`).join(", ")})`);
    await tx.unsafe(head + tuples.join(", "), batch.flat() as postgres.ParameterOrJSON<never>[]);
    copied += batch.length;
    batch = [];
  };
  // iterate() reads row by row: an event log or image store larger than memory still copies.
  for (const row of select.iterate() as Iterable<Record<string, unknown>>) {
    batch.push(targets.map((c) => convert(row[c.name], c.type)));
    if (batch.length === BATCH_ROWS) await flush();
  }
  await flush();
  for (const col of targets.filter((c) => c.always)) {
    await tx.unsafe(
      `SELECT setval(pg_get_serial_sequence($1, $2), greatest(coalesce(max(${quoteId(col.name)}), 0), 1),
        max(${quoteId(col.name)}) IS NOT NULL) FROM ${quoteId(spec.to)}`,
      [spec.to, col.name],
    );
  }
  return copied;
}
