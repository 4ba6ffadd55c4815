/**
 * Web push state in PostgreSQL, for several replicas on one database. The key pair is one row (a boolean
 * primary key that can only be true): a replica that finds none makes a pair, inserts it `ON CONFLICT DO
 * NOTHING` and reads back what is stored, so replicas starting together all sign with the first pair stored.
 * Subscriptions are keyed by endpoint as on SQLite; the kinds stay a JSON array, matched with `jsonb ?`.
 */
import type postgres from "postgres";
import { type ConnectOptions, PgStore } from "./pg_client.ts";
import { openMigrated } from "./pg_migrate.ts";
import {
  type NotifyKind,
  type PushLog,
  type PushSubscriptionRecord,
  type PushSubscriptionSummary,
  summary,
  type VapidKeys,
} from "./push_log.ts";

const COLUMNS = `endpoint, p256dh, auth, kinds, owner, created_at AS "createdAt"`;
// Ties in age sort by endpoint bytewise, as on SQLite, whatever the database's collation.
const ORDER = `ORDER BY created_at, endpoint COLLATE "C"`;

/** The push log over a PostgreSQL pool whose database is migrated. */
export class PgPushLog extends PgStore implements PushLog {
  /**
   * Connect to `url` and migrate its schema (lib/storage/pg_migrate.ts).
   * @throws {Error} when the database cannot be reached or migrated; the pool is then closed.
   */
  static async open(url: string, options: ConnectOptions = {}): Promise<PgPushLog> {
    const sql = await openMigrated(url, options);
    return new PgPushLog(sql, { ownsPool: true });
  }

  async vapidKeys(make: () => VapidKeys): Promise<VapidKeys> {
    const stored = await this.#stored();
    if (stored) return stored;
    const made = make();
    await this
      .sql`INSERT INTO push_keys(public_key, private_key) VALUES (${made.publicKey}, ${made.privateKey})
      ON CONFLICT (only_row) DO NOTHING`;
    // Another replica may have won the insert; what is stored is what counts.
    const kept = await this.#stored();
    if (!kept) throw new Error("the VAPID key pair was not stored");
    return kept;
  }

  async upsert(s: PushSubscriptionRecord): Promise<void> {
    await this.sql`INSERT INTO push_subscriptions(endpoint, p256dh, auth, kinds, owner, created_at)
      VALUES (${s.endpoint}, ${s.p256dh}, ${s.auth}, ${JSON.stringify(s.kinds)}, ${s.owner}, ${s.createdAt})
      ON CONFLICT (endpoint) DO UPDATE SET p256dh = excluded.p256dh, auth = excluded.auth,
        kinds = excluded.kinds, owner = excluded.owner`;
  }

  async remove(endpoint: string): Promise<boolean> {
    return (await this.sql`DELETE FROM push_subscriptions WHERE endpoint = ${endpoint}`).count > 0;
  }

  async targets(kind: NotifyKind): Promise<PushSubscriptionRecord[]> {
    const rows = await this.sql.unsafe(
      `SELECT ${COLUMNS} FROM push_subscriptions WHERE kinds::jsonb ? $1 ${ORDER}`,
      [kind],
    );
    return rows.map(record);
  }

  async kindsOf(endpoint: string): Promise<NotifyKind[] | null> {
    const [row] = await this.sql`SELECT kinds FROM push_subscriptions WHERE endpoint = ${endpoint}`;
    return row ? JSON.parse(row.kinds as string) : null;
  }

  async ofOwner(owner: string): Promise<PushSubscriptionSummary[]> {
    const rows = await this.sql.unsafe(
      `SELECT ${COLUMNS} FROM push_subscriptions WHERE owner = $1 ${ORDER}`,
      [
        owner,
      ],
    );
    return rows.map((r) => summary(record(r)));
  }

  async #stored(): Promise<VapidKeys | null> {
    const [row] = await this.sql`SELECT public_key, private_key FROM push_keys`;
    return row ? { publicKey: row.public_key as string, privateKey: row.private_key as string } : null;
  }
}

function record(r: postgres.Row): PushSubscriptionRecord {
  return { ...r, kinds: JSON.parse(r.kinds as string) } as PushSubscriptionRecord;
}
