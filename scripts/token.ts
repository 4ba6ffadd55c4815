/**
 * `deno task token add NAME --role admin|operator|viewer|agent` (prints the token once), `deno task token list`,
 * `deno task token revoke NAME`: named tokens in the data dir's database (`LVMH_DATA_DIR`, default `./data`),
 * whether or not the daemon runs (a running daemon sees additions at once and closes revoked tokens' sockets
 * within a second). Exit codes: 0 ok, 1 refused (name taken, no such token), 2 bad usage.
 */
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { ROLES } from "../lib/token_store.ts";
import type { TokenLog } from "../lib/storage/token_log.ts";
import { SqliteTokenLog } from "../lib/storage/sqlite_token_log.ts";
import { PgTokenLog } from "../lib/storage/pg_token_log.ts";
import { DatabaseUnavailable, openDatabase } from "../lib/storage/open.ts";
import { addToken } from "../lib/tokens.ts";
import { RoleName } from "../lib/protocol.ts";

const USAGE = `usage:
  deno task token add NAME --role admin|operator|viewer|agent
  deno task token list
  deno task token revoke NAME`;

function fail(code: number, message: string): never {
  console.error(message);
  Deno.exit(code);
}

async function main(args: string[]): Promise<void> {
  const [command, ...rest] = args;
  if (!command || command === "--help" || command === "-h") {
    console.log(USAGE);
    return;
  }
  const { tokens: store, close } = await openTokens();
  try {
    if (command === "list") {
      if (rest.length) fail(2, USAGE);
      const rows = await store.list();
      if (rows.length === 0) console.log("no named tokens (the bootstrap token is data/token or LVMH_TOKEN)");
      for (const t of rows) {
        const state = t.revokedAt ? `revoked ${new Date(t.revokedAt).toISOString()}` : "active";
        const used = t.lastUsedAt ? new Date(t.lastUsedAt).toISOString() : "never";
        console.log(`${t.name}\t${t.role}\t${state}\tlast used ${used}`);
      }
    } else if (command === "add") {
      const name = rest[0];
      const at = rest.indexOf("--role");
      const role = RoleName.safeParse(at > 0 ? rest[at + 1] : undefined);
      if (!name || name.startsWith("-") || !role.success || rest.length !== 3) {
        fail(2, `${USAGE}\n(roles: ${ROLES.join(", ")})`);
      }
      try {
        const created = await addToken(store, name, role.data);
        console.log(created.token);
        console.error(`token "${created.name}" (${created.role}) created; it is shown only this once`);
      } catch (error) {
        fail(1, (error as Error).message);
      }
    } else if (command === "revoke") {
      if (rest.length !== 1) fail(2, USAGE);
      if (!await store.revoke(rest[0])) fail(1, `No live token named "${rest[0]}"`);
      console.log(`token "${rest[0]}" revoked`);
    } else {
      fail(2, USAGE);
    }
  } finally {
    await close();
  }
}

/**
 * Where the daemon keeps its tokens: the replicas' shared database when `LVMH_DATABASE_URL` is set (as
 * lib/config.ts reads it, with `LVMH_DATABASE_CA_FILE`), else the data dir's file.
 */
async function openTokens(): Promise<{ tokens: TokenLog; close(): Promise<void> }> {
  const url = Deno.env.get("LVMH_DATABASE_URL");
  if (url) {
    try {
      const database = await openDatabase({ url, caFile: Deno.env.get("LVMH_DATABASE_CA_FILE") || null });
      const tokens = new PgTokenLog(database.sql, database.listen);
      return { tokens, close: async () => (await tokens.close(), await database.close()) };
    } catch (error) {
      if (error instanceof DatabaseUnavailable) fail(2, `lvmh: ${error.message}`);
      fail(2, `LVMH_DATABASE_URL: ${(error as Error).message}`);
    }
  }
  const dir = Deno.env.get("LVMH_DATA_DIR") || "./data";
  try {
    Deno.mkdirSync(dir, { recursive: true });
  } catch (error) {
    fail(2, `LVMH_DATA_DIR: cannot create ${dir}: ${(error as Error).message}`);
  }
  const db = new DatabaseSync(join(dir, "lvmh.db"));
  db.exec("PRAGMA journal_mode=WAL; PRAGMA busy_timeout=5000;");
  const tokens = new SqliteTokenLog(db);
  return { tokens, close: async () => (await tokens.close(), db.close()) };
}

if (import.meta.main) await main(Deno.args);
