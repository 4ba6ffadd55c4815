/**
 * The audit log in PostgreSQL, for several replicas on one database. An append is one statement: the
 * single-row `audit_counter` is moved and the row inserted with that id, in one transaction that holds the
 * counter's row lock to commit, so ids commit in order across replicas and a page read by `id > after` never
 * skips a row that commits later. Appends are human actions and failed sign-ins: serialising them costs
 * nothing that matters.
 */
import { type ConnectOptions, PgStore } from "./pg_client.ts";
import { openMigrated } from "./pg_migrate.ts";
import { safeInteger } from "./event_log.ts";
import {
  type AuditEntry,
  type AuditInput,
  type AuditLog,
  detailText,
  detailValue,
  MAX_PAGE,
} from "./audit_log.ts";
import type { Role } from "../wire.ts";

/** The audit log over a PostgreSQL pool whose database is migrated. */
export class PgAuditLog extends PgStore implements AuditLog {
  /**
   * Connect to `url` and migrate its schema (lib/storage/pg_migrate.ts).
   * @throws {Error} when the database cannot be reached or migrated; the pool is then closed.
   */
  static async open(url: string, options: ConnectOptions = {}): Promise<PgAuditLog> {
    const sql = await openMigrated(url, options);
    return new PgAuditLog(sql, { ownsPool: true });
  }

  async append(entry: AuditInput): Promise<void> {
    try {
      await this.sql`WITH counter AS (UPDATE audit_counter SET last_id = last_id + 1 RETURNING last_id)
        INSERT INTO audit(id, at, actor, role, action, session_id, detail)
          SELECT last_id, ${Date.now()}, ${entry.actor}, ${entry.role}, ${entry.action},
            ${entry.sessionId ?? null}, ${detailText(entry.detail)} FROM counter`;
    } catch (error) {
      // The message is the driver's (no values of the row): the detail may hold a prompt's text.
      console.error(`lvmh: could not append to the audit log: ${(error as Error).message}`);
    }
  }

  async page(after: number, limit: number): Promise<AuditEntry[]> {
    const rows = await this.sql`SELECT id, at, actor, role, action, session_id, detail FROM audit
      WHERE id > ${after} ORDER BY id LIMIT ${Math.min(limit, MAX_PAGE)}`;
    return rows.map((r) => ({
      id: safeInteger(r.id),
      at: safeInteger(r.at),
      actor: r.actor as string,
      role: r.role as Role | null,
      action: r.action as string,
      sessionId: r.session_id as string | null,
      detail: detailValue(r.detail as string | null),
    }));
  }
}
