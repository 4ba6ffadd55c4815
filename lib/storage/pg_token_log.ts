/**
 * Named tokens in PostgreSQL, for several replicas on one database. Each call is one statement. A revocation
 * stamps `revoked_at` with the database server's clock (one clock for every replica, so the sweeps' windows
 * agree), commits, and only then sends `pg_notify` of the name in a statement of its own: NOTIFY takes a
 * global lock at commit and is only a hint anyway (lost while a listener reconnects).
 *
 * Subscribers: LISTEN on a dedicated connection kept alive by lib/storage/pg_listener.ts (re-LISTEN after a
 * close, a watchdog for a connection gone silent). A hint, a (re)LISTEN and every `REVOKED_SWEEP_MS` make each
 * subscription read the names revoked since its last look (a partial index keeps it cheap); the hint's payload
 * is never trusted, anyone on the database can NOTIFY.
 */
import { type ConnectOptions, PgStore, type Sql } from "./pg_client.ts";
import { openMigrated } from "./pg_migrate.ts";
import { LISTENER_PING_MS, listenerClient, type PgListener, watchesListener } from "./pg_listener.ts";
import { Watches } from "./looks.ts";
import { safeInteger } from "./event_log.ts";
import {
  type OnRevoked,
  REVOKED_SLACK_MS,
  REVOKED_SWEEP_MS,
  RevokedWatch,
  type RevokedWindow,
  type Role,
  type TokenInfo,
  type TokenLog,
  type TokenOwner,
} from "./token_log.ts";

/** The NOTIFY channel; the payload is a revoked name (empty: a listener's liveness ping). */
export const REVOKED_CHANNEL = "lvmh_tok";

export interface PgTokenLogOptions {
  /** Sweep period of each subscription (default `REVOKED_SWEEP_MS`). */
  sweepMs?: number;
  /** Ping period of the listener's watchdog (default 5 s). */
  pingMs?: number;
  /** true: `close()` ends the pool. */
  ownsPool?: boolean;
}

/** The token log over a PostgreSQL pool whose database is migrated. */
export class PgTokenLog extends PgStore implements TokenLog {
  #sweepMs: number;
  #listener: PgListener;
  #watches = new Watches<RevokedWatch>();
  #closed = false;

  /**
   * @param connectListener opens the client whose one connection LISTENs (again after the watchdog dropped
   *   the previous one); never the pool itself, whose connections come and go.
   */
  constructor(sql: Sql, connectListener: () => Sql, options: PgTokenLogOptions = {}) {
    super(sql, options);
    this.#sweepMs = options.sweepMs ?? REVOKED_SWEEP_MS;
    this.#listener = watchesListener(this.#watches, {
      channel: REVOKED_CHANNEL,
      connect: connectListener,
      pool: sql,
      pingMs: options.pingMs ?? LISTENER_PING_MS,
    });
  }

  /**
   * Connect to `url` and migrate its schema (lib/storage/pg_migrate.ts).
   * @throws {Error} when the database cannot be reached or migrated; the pool is then closed.
   */
  static async open(
    url: string,
    options: ConnectOptions & Omit<PgTokenLogOptions, "ownsPool"> = {},
  ): Promise<PgTokenLog> {
    const sql = await openMigrated(url, options);
    const listener = listenerClient(url, options);
    return new PgTokenLog(sql, listener, { ...options, ownsPool: true });
  }

  async insert(name: string, role: Role, hash: string): Promise<boolean> {
    // No conflict target: a taken name and a taken hash are both refused, as SQLite's INSERT OR IGNORE does.
    const rows = await this.sql`INSERT INTO tokens(name, role, hash, created_at)
      VALUES (${name}, ${role}, ${hash}, ${Date.now()}) ON CONFLICT DO NOTHING RETURNING name`;
    return rows.length > 0;
  }

  async find(hash: string): Promise<TokenOwner | null> {
    const [row] = await this.sql`SELECT name, role, revoked_at FROM tokens WHERE hash = ${hash}`;
    return row && row.revoked_at === null ? { name: row.name as string, role: row.role as Role } : null;
  }

  async touch(name: string, at: number): Promise<void> {
    await this.sql`UPDATE tokens SET last_used_at = ${at} WHERE name = ${name}`.catch(() => {
      // Best effort: a sign-in is a read; an unrecorded use costs nothing.
    });
  }

  async list(): Promise<TokenInfo[]> {
    const rows = await this.sql`SELECT name, role, created_at, last_used_at, revoked_at FROM tokens
      ORDER BY created_at, id`;
    return rows.map((r) => ({
      name: r.name as string,
      role: r.role as Role,
      createdAt: safeInteger(r.created_at),
      lastUsedAt: r.last_used_at === null ? null : safeInteger(r.last_used_at),
      revokedAt: r.revoked_at === null ? null : safeInteger(r.revoked_at),
    }));
  }

  async revoke(name: string): Promise<boolean> {
    const [row] = await this.sql`UPDATE tokens
      SET revoked_at = (extract(epoch FROM clock_timestamp()) * 1000)::bigint
      WHERE name = ${name} AND revoked_at IS NULL RETURNING revoked_at`;
    if (!row) return false;
    // Committed. A hint that fails to go is found by the other replicas' sweeps.
    await this.sql`SELECT pg_notify(${REVOKED_CHANNEL}, ${name})`.catch(() => {});
    for (const watch of this.#watches) watch.heard(name, safeInteger(row.revoked_at));
    return true;
  }

  async revokedSince(since: number): Promise<{ name: string; revokedAt: number }[]> {
    const rows = await this.sql`SELECT name, revoked_at FROM tokens WHERE revoked_at >= ${since}`;
    return rows.map((r) => ({ name: r.name as string, revokedAt: safeInteger(r.revoked_at) }));
  }

  revoked(onRevoked: OnRevoked): () => void {
    if (this.#closed) return () => {};
    const read = async (since: number | null): Promise<RevokedWindow> => {
      // The server's clock read with the rows: the next window starts from it, whatever this replica's is.
      const rows = await this.sql`WITH clock AS (
          SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now)
        SELECT clock.now, t.name, t.revoked_at FROM clock LEFT JOIN tokens t
          ON t.revoked_at >= coalesce(${since}::bigint, clock.now - ${REVOKED_SLACK_MS})`;
      return {
        now: safeInteger(rows[0].now),
        rows: rows.filter((r) => r.name !== null).map((r) => ({
          name: r.name as string,
          revokedAt: safeInteger(r.revoked_at),
        })),
      };
    };
    const watch = new RevokedWatch(read, onRevoked, this.#sweepMs);
    const unwatch = this.#watches.add(watch);
    // The listener stays until `close()`: a LISTEN made anew per subscriber would miss hints meanwhile.
    if (!this.#closed) void this.#listener.start();
    return unwatch;
  }

  override async close(): Promise<void> {
    this.#closed = true;
    this.#watches.stop();
    await this.#listener.close();
    await super.close();
  }
}
