/**
 * Opening a deployment's shared PostgreSQL database (`LVMH_DATABASE_URL`): TLS as the URL's `sslmode` and the
 * CA file say, the schema migrated, and a failure within seconds that says where and why, so a replica that
 * cannot use the database stops at start instead of serving without its state.
 *
 * `sslmode` means what it means to libpq (the driver alone would verify nothing with `require` and check the
 * host name with `verify-ca`):
 * - `disable`: no TLS; `allow`, `prefer` (the default without a CA file): TLS when the server offers it, its
 *   certificate unchecked;
 * - `require`: TLS or nothing, unchecked, unless a CA file is given, which makes it `verify-ca` (as libpq does
 *   when it finds a root certificate);
 * - `verify-ca`: the chain must end at the CA file's CA (the system's roots without one);
 * - `verify-full` (the default with a CA file, or with `sslrootcert=system`): `verify-ca` and the certificate
 *   must name the URL's host.
 */
import { checkServerIdentity, type ConnectionOptions } from "node:tls";
import postgres from "postgres";
import type { Config } from "../config.ts";
import { UnavailableError } from "../errors.ts";
import { type ConnectOptions, connectPostgres, type Sql } from "./pg_client.ts";
import { migrate } from "./pg_migrate.ts";

/** The database every replica shares, opened and migrated. */
export interface SharedDatabase {
  /** A pool on the migrated database. */
  sql: Sql;
  /** Opens a one-connection client to LISTEN through (a PgListener's `connect`), with the pool's TLS. */
  listen: () => Sql;
  /** End the pool (a client from `listen` is ended by whoever opened it). */
  close(): Promise<void>;
}

export interface OpenDatabaseOptions {
  /** Connections in the pool (default 10). */
  max?: number;
  /** Seconds a connection may take, TLS and authentication included (default `CONNECT_TIMEOUT`). */
  connectTimeout?: number;
}

/** Seconds to connect before the database counts as unreachable. */
export const CONNECT_TIMEOUT = 5;

/** The database cannot be used: `where` is `host:port/database`, `why` never holds the password. */
export class DatabaseUnavailable extends UnavailableError {
  override name = "DatabaseUnavailable";
  readonly where: string;
  readonly why: string;

  constructor(where: string, why: string) {
    super(`cannot reach the database at ${where}: ${why}`);
    this.where = where;
    this.why = why;
  }
}

/** TLS settings as pg_client's `ssl` takes them. */
type Tls = NonNullable<ConnectOptions["ssl"]>;

/** Certificate errors that mean "not signed by a CA we trust". */
const UNTRUSTED = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "CERT_UNTRUSTED",
]);

/**
 * Connect to the shared database (within `connectTimeout`) and migrate its schema.
 * @throws {DatabaseUnavailable} the server refused, did not answer, failed TLS or authentication, or the schema
 *   could not be migrated; nothing is left open.
 */
export async function openDatabase(
  db: NonNullable<Config["database"]>,
  options: OpenDatabaseOptions = {},
): Promise<SharedDatabase> {
  const url = new URL(db.url);
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  const port = Number(url.port || 5432);
  const where = `${url.hostname}:${port}/${safeDecode(url.pathname.slice(1)) || safeDecode(url.username)}`;
  const hide = hider(url.password);
  const mode = url.searchParams.get("sslmode") ??
    (db.caFile || url.searchParams.get("sslrootcert") === "system" ? "verify-full" : "prefer");
  // TLS is given to the driver as an option: these two left in the URL would be sent to the server as settings.
  url.searchParams.delete("sslmode");
  url.searchParams.delete("sslrootcert");
  let ca: string | undefined;
  if (db.caFile) {
    try {
      ca = await Deno.readTextFile(db.caFile);
    } catch (error) {
      throw new DatabaseUnavailable(
        where,
        `cannot read the CA file ${db.caFile}: ${(error as Error).message}`,
      );
    }
  }
  const connect: ConnectOptions = {
    connectTimeout: options.connectTimeout ?? CONNECT_TIMEOUT,
    ssl: tls(mode, host, ca),
  };
  const sql = connectPostgres(String(url), { ...connect, max: options.max });
  try {
    await reachable(sql, connect.connectTimeout!);
  } catch (error) {
    await sql.end({ timeout: 0 }).catch(() => {});
    const why = await reason(error, mode, { host, port, ca: Boolean(ca), timeout: connect.connectTimeout! });
    throw new DatabaseUnavailable(where, hide(why));
  }
  try {
    await migrate(sql);
  } catch (error) {
    await sql.end({ timeout: 1 }).catch(() => {});
    throw new DatabaseUnavailable(where, hide(`cannot migrate the schema: ${(error as Error).message}`));
  }
  return {
    sql,
    listen: () => connectPostgres(String(url), { ...connect, max: 1 }),
    close: () => sql.end({ timeout: 5 }),
  };
}

/** What the driver is told for `mode` (see the module's doc). */
function tls(mode: string, host: string, ca: string | undefined): Tls {
  const trusted: ConnectionOptions = ca ? { ca } : {};
  switch (mode) {
    case "disable":
      return false;
    case "allow":
    case "prefer":
      return "prefer";
    case "require":
      return ca ? { ...trusted, checkServerIdentity: () => undefined } : "require";
    case "verify-ca":
      return { ...trusted, checkServerIdentity: () => undefined };
    default:
      // The driver gives Node no host name for an IP address, so the check is made here against the URL's.
      return { ...trusted, checkServerIdentity: (_name, cert) => checkServerIdentity(host, cert) };
  }
}

/** One round trip, within the connect timeout plus a second even if the driver kept retrying. */
async function reachable(sql: Sql, timeout: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const query = sql`SELECT 1`.execute();
  query.catch(() => {});
  try {
    await Promise.race([
      query,
      new Promise((_, reject) => {
        timer = setTimeout(
          () => reject(Object.assign(new Error("timed out"), { code: "CONNECT_TIMEOUT" })),
          timeout * 1000 + 1000,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** A short reason for a failed connection, in the operator's terms. */
async function reason(
  error: unknown,
  mode: string,
  at: { host: string; port: number; ca: boolean; timeout: number },
): Promise<string> {
  const e = error as Error & { code?: string };
  if (e instanceof postgres.PostgresError) return e.message;
  if (e.code === "ECONNREFUSED") return "connection refused";
  if (e.code === "ENOTFOUND" || e.code === "EAI_AGAIN") return `host ${at.host} not found`;
  if (e.code === "CONNECT_TIMEOUT") return `no answer within ${at.timeout} s`;
  if (e.code && UNTRUSTED.has(e.code)) {
    const hint = at.ca ? "" : " (give the CA that signed it as LVMH_DATABASE_CA_FILE)";
    return `TLS: the server's certificate is not trusted: ${e.message}${hint}`;
  }
  if (e.code === "ERR_TLS_CERT_ALTNAME_INVALID") {
    return `TLS: the server's certificate is for another host: ${e.message}`;
  }
  // The driver reports a server without TLS as a reset in the handshake; ask the server to say which it is.
  if (mode !== "disable" && mode !== "allow" && mode !== "prefer" && await offersTls(at) === false) {
    return `the server does not offer TLS, which sslmode=${mode} requires`;
  }
  return e.message.split("\n")[0];
}

/** Whether the server accepts TLS (PostgreSQL's SSLRequest answered S or N); null when it cannot be told. */
async function offersTls(at: { host: string; port: number; timeout: number }): Promise<boolean | null> {
  let conn: Deno.Conn | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let settled = false;
  const ask = async () => {
    const opened = await Deno.connect({ hostname: at.host, port: at.port });
    // Too late: the answer was given up on, and nobody else would close this.
    if (settled) {
      opened.close();
      return null;
    }
    conn = opened;
    // Length 8, then the SSLRequest code 80877103.
    await conn.write(new Uint8Array([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]));
    const answer = new Uint8Array(1);
    if (await conn.read(answer) !== 1) return null;
    return answer[0] === 0x53 ? true : answer[0] === 0x4e ? false : null;
  };
  try {
    return await Promise.race([
      ask(),
      new Promise<null>((r) => timer = setTimeout(() => r(null), at.timeout * 1000)),
    ]);
  } catch {
    return null;
  } finally {
    settled = true;
    clearTimeout(timer);
    try {
      conn?.close();
    } catch {
      // Closed already.
    }
  }
}

/** Replaces the URL's password, as written and decoded, in a message. */
function hider(password: string): (text: string) => string {
  const secrets = [...new Set([password, safeDecode(password)])].filter((s) => s.length > 0);
  return (text) => secrets.reduce((t, s) => t.replaceAll(s, "***"), text);
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
