/**
 * Webhooks in PostgreSQL, for several replicas on one database. The tables are the SQLite ones
 * (lib/webhooks/webhook_store.ts) with the claim kept on the outbox row itself: who, the claim's number and
 * the lease's end.
 *
 * Claiming is one statement: the due rows are picked `FOR UPDATE SKIP LOCKED` and updated in the same
 * statement, so two replicas claiming at once never wait for each other and never pick the same row (a row
 * another claim has locked is skipped; one it committed meanwhile is re-checked by READ COMMITTED and no
 * longer due). Recording an outcome is one statement too: the conditional UPDATE (this claim, still pending)
 * and the attempt's log row commit together or not at all.
 */
import { type ConnectOptions, PgStore, type Sql } from "./pg_client.ts";
import { openMigrated } from "./pg_migrate.ts";
import {
  type AttemptOutcome,
  type AttemptRow,
  type ClaimedDelivery,
  DEFAULT_LEASE_MS,
  DEFAULT_RETRY,
  type Endpoint,
  type EndpointRecord,
  type NewDelivery,
  type RetryPolicy,
  settleAttempt,
  type Settled,
  type WebhookLog,
  type WebhookLogOptions,
} from "./webhook_log.ts";

export interface PgWebhookLogOptions extends WebhookLogOptions {
  /** true: `close()` ends the pool. */
  ownsPool?: boolean;
}

/** The outbox columns as `WebhookStore` names them, and the claim's. */
const DELIVERY =
  `o.id, o.endpoint_id AS "endpointId", o.type, o.body, o.created_at AS "createdAt", o.attempts,
  o.next_at AS "nextAt", o.state, o.claim, o.claimed_by AS "replica", o.lease_until AS "leaseUntil"`;
const ATTEMPT = `a.delivery_id AS "deliveryId", a.type, a.at, a.status, a.latency_ms AS "latencyMs", a.error,
  coalesce(o.state, 'gone') AS state`;

/** The webhook log over a PostgreSQL pool whose database is migrated. */
export class PgWebhookLog extends PgStore implements WebhookLog {
  #retry: RetryPolicy;
  #leaseMs: number;

  constructor(sql: Sql, options: PgWebhookLogOptions = {}) {
    super(sql, options);
    this.#retry = { ...DEFAULT_RETRY, ...options.retry };
    this.#leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
  }

  /**
   * Connect to `url` and migrate its schema (lib/storage/pg_migrate.ts).
   * @throws {Error} when the database cannot be reached or migrated; the pool is then closed.
   */
  static async open(url: string, options: ConnectOptions & WebhookLogOptions = {}): Promise<PgWebhookLog> {
    const sql = await openMigrated(url, options);
    return new PgWebhookLog(sql, { retry: options.retry, leaseMs: options.leaseMs, ownsPool: true });
  }

  async addEndpoint(e: EndpointRecord): Promise<void> {
    await this.sql`INSERT INTO webhook_endpoints(id, url, events, secret, created_at)
      VALUES (${e.id}, ${e.url}, ${JSON.stringify(e.events)}, ${e.secret}, ${e.createdAt})`;
  }

  async list(): Promise<Endpoint[]> {
    // The latest attempt of each endpoint in the same read, so a list never pairs an endpoint with a stranger's.
    const rows = await this.sql.unsafe(
      `SELECT e.id, e.url, e.events, e.created_at AS "createdAt", last.* FROM webhook_endpoints e
        LEFT JOIN LATERAL (SELECT ${ATTEMPT} FROM webhook_attempts a
          LEFT JOIN webhook_outbox o ON o.id = a.delivery_id
          WHERE a.endpoint_id = e.id ORDER BY a.seq DESC LIMIT 1) last ON true
        ORDER BY e.created_at, e.pos`,
    );
    return rows.map((r) => ({
      id: r.id,
      url: r.url,
      events: JSON.parse(r.events),
      createdAt: r.createdAt,
      last: r.deliveryId === null ? null : {
        deliveryId: r.deliveryId,
        type: r.type,
        at: r.at,
        status: r.status,
        latencyMs: r.latencyMs,
        error: r.error,
        state: r.state,
      },
    }));
  }

  async has(id: string): Promise<boolean> {
    return (await this.sql`SELECT 1 FROM webhook_endpoints WHERE id = ${id}`).length > 0;
  }

  async subscribers(type: string): Promise<string[]> {
    const rows = await this.sql.unsafe(
      "SELECT id FROM webhook_endpoints WHERE events::jsonb ? $1 ORDER BY created_at, pos",
      [type],
    );
    return rows.map((r) => r.id as string);
  }

  async removeEndpoint(id: string): Promise<boolean> {
    return await this.sql.begin(async (tx) => {
      const gone = await tx`DELETE FROM webhook_endpoints WHERE id = ${id}`;
      // Delivered and failed rows stay, as on SQLite: the attempt log still shows their state.
      await tx`DELETE FROM webhook_outbox WHERE endpoint_id = ${id} AND state = 'pending'`;
      return gone.count > 0;
    });
  }

  async enqueue(rows: readonly NewDelivery[]): Promise<number> {
    if (!rows.length) return 0;
    // One statement: all rows or none, and only for endpoints that exist when it runs. An endpoint removed by
    // a concurrent transaction either committed first (its rows are not inserted) or waits on our key share
    // lock and then deletes what we queued.
    const inserted = await this
      .sql`INSERT INTO webhook_outbox(id, endpoint_id, type, body, created_at, next_at)
      SELECT r.id, r.endpoint_id, r.type, r.body, r.created_at, r.created_at
        FROM unnest(${rows.map((r) => r.id)}::text[], ${rows.map((r) => r.endpointId)}::text[],
          ${rows.map((r) => r.type)}::text[], ${rows.map((r) => r.body)}::text[],
          ${rows.map((r) => r.createdAt)}::bigint[]) AS r(id, endpoint_id, type, body, created_at)
        JOIN webhook_endpoints e ON e.id = r.endpoint_id FOR KEY SHARE OF e
      ON CONFLICT (id) DO NOTHING`;
    return inserted.count;
  }

  async claimDue(replica: string, now: number, limit: number): Promise<ClaimedDelivery[]> {
    const rows = await this.sql.unsafe(
      `WITH due AS (
          SELECT id FROM webhook_outbox
            WHERE state = 'pending' AND next_at <= $2 AND (lease_until IS NULL OR lease_until <= $2)
            ORDER BY next_at, id COLLATE "C" LIMIT $3 FOR UPDATE SKIP LOCKED),
        claimed AS (
          UPDATE webhook_outbox o SET claimed_by = $1, claim = o.claim + 1, lease_until = $4
            FROM due WHERE o.id = due.id RETURNING o.*)
      SELECT ${DELIVERY}, e.url, e.secret FROM claimed o JOIN webhook_endpoints e ON e.id = o.endpoint_id
        ORDER BY o.next_at, o.id COLLATE "C"`,
      [replica, now, limit, now + this.#leaseMs],
    );
    return [...rows] as unknown as ClaimedDelivery[];
  }

  async recordAttempt(claim: ClaimedDelivery, outcome: AttemptOutcome, now: number): Promise<Settled | null> {
    // The claim's row is the delivery as it was claimed; the UPDATE only applies if nothing changed it since.
    const next = settleAttempt(claim, outcome.ok, now, this.#retry);
    const done = next.state === "pending" ? null : outcome.at;
    const rows = await this.sql`WITH settled AS (
        UPDATE webhook_outbox SET attempts = attempts + 1, state = ${next.state}, next_at = ${next.nextAt},
          last_status = ${outcome.status}, last_error = ${outcome.error}, done_at = ${done},
          claimed_by = NULL, lease_until = NULL
        WHERE id = ${claim.id} AND state = 'pending' AND claimed_by = ${claim.replica} AND claim = ${claim.claim}
        RETURNING id, endpoint_id, type)
      INSERT INTO webhook_attempts(delivery_id, endpoint_id, type, at, status, latency_ms, error)
        SELECT id, endpoint_id, type, ${outcome.at}, ${outcome.status}, ${outcome.latencyMs}, ${outcome.error}
          FROM settled
      RETURNING delivery_id`;
    return rows.length ? next : null;
  }

  async nextDue(): Promise<number | null> {
    const [row] = await this.sql`SELECT min(greatest(o.next_at, coalesce(o.lease_until, 0))) AS at
      FROM webhook_outbox o JOIN webhook_endpoints e ON e.id = o.endpoint_id WHERE o.state = 'pending'`;
    return (row.at as number | null) ?? null;
  }

  async log(endpointId: string, limit = 100): Promise<AttemptRow[]> {
    const rows = await this.sql.unsafe(
      `SELECT ${ATTEMPT} FROM webhook_attempts a LEFT JOIN webhook_outbox o ON o.id = a.delivery_id
        WHERE a.endpoint_id = $1 ORDER BY a.seq DESC LIMIT $2`,
      [endpointId, limit],
    );
    return [...rows] as unknown as AttemptRow[];
  }
}
