/**
 * `deno task db:copy --from sqlite:PATH --to postgres://…`: move a stopped daemon's SQLite file into an empty
 * PostgreSQL database, then prove it by counts. Exit 0: copied and every count agrees; 1: refused (the file is
 * in use, the target is not empty, a kind cannot be copied yet) or a count disagrees; 2: bad usage, or the
 * database cannot be reached.
 *
 * TLS is what lib/storage/pg_client.ts gives: `?sslmode=require|verify-full` (and `sslrootcert=system`) in the
 * URL; it has no CA-file option, so neither has this.
 */
import { DatabaseSync } from "node:sqlite";
import { connectPostgres, type Sql } from "../lib/storage/pg_client.ts";
import { migrate } from "../lib/storage/pg_migrate.ts";
import { type Copier, COPIERS, DERIVED, isInternal, quoteId, sqliteNumber } from "../lib/storage/copy/mod.ts";

const USAGE =
  "usage: deno task db:copy --from sqlite:PATH --to postgres://USER:PASSWORD@HOST:PORT/DB [--allow-partial]";

/** Print one line on stderr and leave with `code`. */
function fail(code: 1 | 2, line: string): never {
  console.error(`db:copy: ${line}`);
  Deno.exit(code);
}

interface Args {
  from: string;
  to: URL;
  allowPartial: boolean;
}

function parseArgs(argv: string[]): Args {
  const values: Record<string, string> = {};
  let allowPartial = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--allow-partial") allowPartial = true;
    else if (arg === "--from" || arg === "--to") {
      if (i + 1 >= argv.length) fail(2, `${arg} needs a value; ${USAGE}`);
      values[arg.slice(2)] = argv[++i];
    } else if (/^--(from|to)=/.test(arg)) {
      values[arg.slice(2, arg.indexOf("="))] = arg.slice(arg.indexOf("=") + 1);
    } // Never echo an argument back: it may be the URL with its password.
    else fail(2, `unknown argument #${i + 1}; ${USAGE}`);
  }
  if (!values.from?.startsWith("sqlite:") || values.from.length === "sqlite:".length) {
    fail(2, `--from must be sqlite:PATH; ${USAGE}`);
  }
  let to: URL | null = null;
  try {
    if (values.to) to = new URL(values.to);
  } catch { /* reported below */ }
  if (!to || !["postgres:", "postgresql:"].includes(to.protocol) || !to.hostname) {
    fail(2, `--to must be a postgres:// or postgresql:// URL; ${USAGE}`);
  }
  return { from: values.from.slice("sqlite:".length), to, allowPartial };
}

/**
 * Open the file, make sure no daemon has it, and make the handle read-only. A daemon's handle (WAL mode) keeps a
 * shared lock on the file for as long as it is open, idle or not, so the exclusive lock, asked for at once (no
 * busy wait), tells "still in use" reliably; a `BEGIN IMMEDIATE` alone would pass whenever the daemon happens
 * not to be writing, and a `readOnly` handle would read beside a running daemon through its shared memory (and
 * leave -wal and -shm files behind). Taking that lock needs a read-write open; `query_only` then refuses every
 * write on the handle, and the lock, held to the end, keeps a daemon from starting on the file while we read.
 */
function openSource(path: string): DatabaseSync {
  try {
    if (!Deno.statSync(path).isFile) fail(2, `${path} is not a file`);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) fail(2, `no SQLite file at ${path}`);
    throw e;
  }
  let src: DatabaseSync;
  try {
    src = new DatabaseSync(path);
    src.exec("PRAGMA busy_timeout = 0; PRAGMA locking_mode = EXCLUSIVE; BEGIN IMMEDIATE; ROLLBACK;");
    src.exec("PRAGMA query_only = ON");
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    if (/locked|busy/i.test(message)) {
      fail(1, `${path} is in use (is the daemon still running?): stop it, then copy`);
    }
    fail(1, `cannot read ${path} as SQLite: ${message}`);
  }
  if (
    sqliteNumber(src, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'events'") === 0
  ) {
    fail(1, `${path} is not an lvmh database (it has no events table)`);
  }
  return src;
}

/** Connect and ask once, so an unreachable server is one line naming where, not a stack. */
async function openTarget(url: URL): Promise<Sql> {
  const where = `${url.hostname}:${url.port || "5432"}`;
  const sql = connectPostgres(url.href, { max: 2, connectTimeout: 5 });
  try {
    await sql`SELECT 1`;
  } catch (e) {
    await sql.end({ timeout: 1 }).catch(() => {});
    const err = e as { code?: string; message?: string };
    let reason = err.code && /^[A-Z_]+$/.test(err.code) ? err.code : err.message ?? String(e);
    if (url.password) reason = reason.replaceAll(decodeURIComponent(url.password), "***");
    fail(2, `cannot reach PostgreSQL at ${where}: ${reason}`);
  }
  return sql;
}

/** The target's tables holding rows (every table but the schema's version; the audit counter when moved). */
async function nonEmpty(sql: Sql, tables: Set<string>): Promise<string[]> {
  const found: string[] = [];
  for (const t of [...tables].sort()) {
    if (t === "schema_version") continue;
    const query = t === "audit_counter"
      ? "SELECT count(*)::bigint AS n FROM audit_counter WHERE last_id <> 0"
      : `SELECT count(*)::bigint AS n FROM ${quoteId(t)}`;
    const n = Number((await sql.unsafe(query))[0].n);
    if (n > 0) found.push(`${t}: ${n}`);
  }
  return found;
}

function rowsOf(src: DatabaseSync, table: string): number {
  return sqliteNumber(src, `SELECT count(*) FROM ${quoteId(table)}`);
}

async function main(): Promise<number> {
  const args = parseArgs(Deno.args);
  const src = openSource(args.from);
  const sql = await openTarget(args.to);
  try {
    const { from, to, applied } = await migrate(sql).catch((e) =>
      fail(1, `cannot migrate the schema: ${e.message}`)
    );
    console.log(`schema: version ${from} → ${to}${applied.length ? ` (applied ${applied.join(", ")})` : ""}`);
    const pgTables = new Set(
      (await sql`SELECT table_name FROM information_schema.tables
        WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`).map((r) =>
        r.table_name as string
      ),
    );
    const there = await nonEmpty(sql, pgTables);
    if (there.length) {
      fail(1, `the target database is not empty (${there.join(", ")}): copy into a fresh one`);
    }

    const sqliteTables =
      (src.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as {
        name: string;
      }[]).map((r) => r.name).filter((t) => !isInternal(t));
    const copiable: Copier[] = [];
    /** [kind, table, rows, why] of what stays behind. */
    const behind: [string, string, number, string][] = [];
    for (const c of COPIERS) {
      if (c.pgTables.every((t) => pgTables.has(t))) copiable.push(c);
      else {
        for (const t of c.sqliteTables.filter((t) => sqliteTables.includes(t))) {
          behind.push([c.kind, t, rowsOf(src, t), "not copied: no Postgres table yet"]);
        }
      }
    }
    const claimed = new Set(COPIERS.flatMap((c) => c.sqliteTables));
    for (const t of sqliteTables.filter((t) => !claimed.has(t))) {
      behind.push(
        DERIVED[t]
          ? [DERIVED[t], t, rowsOf(src, t), "rebuilt from the events, not copied"]
          : ["?", t, rowsOf(src, t), "not copied: no copier for this table"],
      );
    }
    // Only rows left behind are lost; an empty table of a kind Postgres lacks yet costs nothing.
    const lost = behind.filter(([, , rows, why]) => rows > 0 && why.startsWith("not copied"));
    if (lost.length && !args.allowPartial) {
      for (const [kind, t, rows, why] of lost) console.error(`db:copy: ${kind} (${t}, ${rows} rows): ${why}`);
      fail(1, "some data has nowhere to go on this schema: nothing copied (--allow-partial copies the rest)");
    }

    const started = performance.now();
    // One transaction for every kind: a failed run leaves the target as empty as it found it (schema only), so
    // the same command can simply run again.
    await sql.begin(async (tx) => {
      for (const c of copiable) {
        await c.copy(src, tx).catch((e) => {
          throw new Error(`${c.kind}: ${e instanceof Error ? e.message : e}`);
        });
      }
    }).catch((e) =>
      fail(1, `the copy failed, nothing was copied (the same command can run again): ${e.message}`)
    );
    console.log(`copied in ${Math.round(performance.now() - started)} ms`);

    const table: string[][] = [["kind", "table", "sqlite", "postgres", ""]];
    let mismatches = 0;
    for (const c of copiable) {
      for (const check of c.checks) {
        const [a, b] = [check.sqlite(src), await check.pg(sql)];
        const same = check.same ? await check.same(src, sql) : a === b;
        if (!same) mismatches++;
        table.push([c.kind, check.label, String(a), String(b), same ? "OK" : "MISMATCH"]);
      }
    }
    for (const [kind, t, rows, why] of behind) table.push([kind, t, String(rows), "-", why]);
    const widths = table[0].map((_, i) => Math.max(...table.map((r) => r[i].length)));
    for (const r of table) console.log(r.map((cell, i) => cell.padEnd(widths[i])).join("  ").trimEnd());
    if (mismatches) {
      console.error(`db:copy: ${mismatches} count(s) differ: do not switch to this database`);
      return 1;
    }
    return 0;
  } finally {
    await sql.end({ timeout: 5 });
    src.close();
  }
}

if (import.meta.main) Deno.exit(await main());
