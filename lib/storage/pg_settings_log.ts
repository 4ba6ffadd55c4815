/**
 * Settings in PostgreSQL, for several replicas on one database: one `settings` table whose rows carry a
 * `version` drawn from a sequence at every write (a sequence's numbers need not commit in order here: a
 * subscription only compares them for equality). A `put` is one transaction; only after its commit is
 * `pg_notify` sent, in a statement of its own and with the key names only (a NOTIFY takes a global lock at
 * commit, and its payload is readable by anyone on the database).
 *
 * Subscribers: LISTEN on a dedicated connection kept alive by lib/storage/pg_listener.ts. A hint, a
 * (re)LISTEN and every `SETTINGS_SWEEP_MS` make each subscription compare the versions with its previous
 * look; the hint's payload is never trusted (anyone on the database can NOTIFY).
 */
import { type ConnectOptions, PgStore, type Sql } from "./pg_client.ts";
import { openMigrated } from "./pg_migrate.ts";
import { LISTENER_PING_MS, listenerClient, type PgListener, watchesListener } from "./pg_listener.ts";
import { Watches } from "./looks.ts";
import {
  entryOf,
  type OnSettingsChanged,
  type SettingEntry,
  SETTINGS_SWEEP_MS,
  type SettingsLog,
  type SettingsSubscription,
  SettingsWatch,
} from "./settings_log.ts";

/** The NOTIFY channel; the payload names the changed keys (empty: a listener's liveness ping). */
export const SETTINGS_CHANNEL = "lvmh_set";

export interface PgSettingsLogOptions {
  /** Sweep period of each subscription (default `SETTINGS_SWEEP_MS`; 0: hints only, for tests). */
  sweepMs?: number;
  /** Ping period of the listener's watchdog (default 5 s). */
  pingMs?: number;
  /** true: `close()` ends the pool. */
  ownsPool?: boolean;
}

/** The settings log over a PostgreSQL pool whose database is migrated. */
export class PgSettingsLog extends PgStore implements SettingsLog {
  #sweepMs: number;
  #listener: PgListener;
  #watches = new Watches<SettingsWatch>();
  #closed = false;

  /**
   * @param connectListener opens the client whose one connection LISTENs (again after the watchdog dropped
   *   the previous one); never the pool itself, whose connections come and go.
   */
  constructor(sql: Sql, connectListener: () => Sql, options: PgSettingsLogOptions = {}) {
    super(sql, options);
    this.#sweepMs = options.sweepMs ?? SETTINGS_SWEEP_MS;
    this.#listener = watchesListener(this.#watches, {
      channel: SETTINGS_CHANNEL,
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
    options: ConnectOptions & Omit<PgSettingsLogOptions, "ownsPool"> = {},
  ): Promise<PgSettingsLog> {
    const sql = await openMigrated(url, options);
    const listener = listenerClient(url, options);
    return new PgSettingsLog(sql, listener, { ...options, ownsPool: true });
  }

  async get(key: string): Promise<string | null> {
    const [row] = await this.sql`SELECT value FROM settings WHERE key = ${key}`;
    return row ? row.value as string : null;
  }

  async getMany(keys: readonly string[]): Promise<Record<string, string | null>> {
    // One statement reads one snapshot: a token and its GitLab are never from two different writes.
    const rows = await this.sql`SELECT key, value FROM settings WHERE key = ANY(${[...keys]}::text[])`;
    const found = new Map(rows.map((r) => [r.key as string, r.value as string]));
    return Object.fromEntries(keys.map((key) => [key, found.get(key) ?? null]));
  }

  async put(changes: Record<string, string | null>): Promise<void> {
    const keys = Object.keys(changes).sort();
    if (!keys.length) return;
    await this.sql.begin(async (tx) => {
      // Keys in one order for every writer, so two puts sharing keys wait for each other, never deadlock.
      for (const key of keys) {
        const value = changes[key];
        if (value === null) await tx`DELETE FROM settings WHERE key = ${key}`;
        else {
          await tx`INSERT INTO settings(key, value) VALUES (${key}, ${value})
            ON CONFLICT(key) DO UPDATE SET value = excluded.value, version = nextval('settings_versions')`;
        }
      }
    });
    // Committed. A hint that fails to go is found by the other replicas' sweeps.
    await this.sql`SELECT pg_notify(${SETTINGS_CHANNEL}, ${keys.join(",").slice(0, 7000)})`.catch(() => {});
    this.#watches.lookAll();
  }

  async list(): Promise<SettingEntry[]> {
    const rows = await this.sql`SELECT key, value FROM settings ORDER BY key COLLATE "C"`;
    return rows.map((r) => entryOf(r.key as string, r.value as string));
  }

  changed(onChanged: OnSettingsChanged): SettingsSubscription {
    if (this.#closed) return Object.assign(() => {}, { ready: Promise.resolve() });
    const read = async () => {
      const rows = await this.sql`SELECT key, version FROM settings`;
      return new Map(rows.map((r) => [r.key as string, String(r.version)]));
    };
    const watch = new SettingsWatch(read, onChanged, this.#sweepMs);
    const unwatch = this.#watches.add(watch);
    // The listener stays until `close()`: a LISTEN made anew per subscriber would miss hints meanwhile.
    // Ready once it listens and the first look is taken: a later commit's hint then finds a state to compare.
    const ready = Promise.all([this.#listener.start(), watch.ready]).then(() => {});
    return Object.assign(unwatch, { ready });
  }

  override async close(): Promise<void> {
    this.#closed = true;
    this.#watches.stop();
    await this.#listener.close();
    await super.close();
  }
}
