/**
 * Connecting to PostgreSQL with npm:postgres (porsager), set up the way every lvmh module expects: 64-bit
 * integers as JS numbers (the driver hands them over as strings by default), no notices on stderr.
 */
import postgres from "postgres";
import type { ConnectionOptions } from "node:tls";

/** A connection pool to one database. */
export type Sql = postgres.Sql;

/** How to connect. */
export interface ConnectOptions {
  /** Connections in the pool (the driver's default is 10). */
  max?: number;
  /** Seconds to wait for a connection before failing (default 10). */
  connectTimeout?: number;
  /**
   * TLS, winning over the URL's `sslmode`: "prefer" (TLS when the server offers it, unverified), "require"
   * (TLS, unverified), or `node:tls` options (TLS, verified as they say). Unset: as the URL says.
   */
  ssl?: false | "prefer" | "require" | ConnectionOptions;
}

/** int8: seq, ts (ms epoch) and epochs. */
const INT8 = 20;

/**
 * Open a pool to `url` (`postgres://user:password@host:port/db`, `?sslmode=require` for TLS). Connections are
 * made on first use.
 */
export function connectPostgres(url: string, options: ConnectOptions = {}): Sql {
  return postgres(url, {
    max: options.max ?? 10,
    connect_timeout: options.connectTimeout ?? 10,
    // Only when given: a present `ssl` key, even undefined, overrides the URL's sslmode.
    ...(options.ssl === undefined ? {} : { ssl: options.ssl }),
    onnotice: () => {},
    types: {
      int8: {
        to: INT8,
        from: [INT8],
        serialize: (value: number | bigint) => String(value),
        // A value past 2^53 stays a BigInt, which `safeInteger` refuses by name instead of rounding it.
        parse: (text: string) => {
          const n = Number(text);
          return Number.isSafeInteger(n) ? n : BigInt(text);
        },
      },
    },
  });
}

/**
 * What every PostgreSQL store shares: its pool, and whether `close()` ends it (a store opened by URL owns its
 * pool; one handed a pool leaves it to whoever made it).
 */
export class PgStore {
  readonly kind = "postgres";
  protected readonly sql: Sql;
  readonly #ownsPool: boolean;

  /**
   * @param sql a pool whose database is migrated (lib/storage/pg_migrate.ts `openMigrated`).
   * @param options.ownsPool true: `close()` ends the pool.
   */
  constructor(sql: Sql, options: { ownsPool?: boolean } = {}) {
    this.sql = sql;
    this.#ownsPool = options.ownsPool ?? false;
  }

  async close(): Promise<void> {
    if (this.#ownsPool) await this.sql.end({ timeout: 5 });
  }
}
