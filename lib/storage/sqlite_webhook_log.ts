/**
 * Webhooks in the daemon's SQLite file, through lib/webhooks/webhook_store.ts itself (its tables and
 * statements stay there, so the file keeps one schema whichever interface the daemon uses). Claims live in a
 * table of their own beside the outbox, one row per delivery: who, which claim, until when, and the attempt
 * count it was made at. A claim is live only while the outbox row still has that count, so recording an
 * attempt (which counts it) ends the claim in the same transaction without touching the claims table.
 *
 * One daemon owns the file: two logs on one handle are two parts of that daemon. node:sqlite is synchronous,
 * so a claim's read and its writes, and an outcome's check and its write, run with nothing in between. Claims
 * made by an earlier process are dropped on first open: that process is gone, so its deliveries go out at once
 * after a restart, as they did before claims existed.
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import { gateOf, type WriteGate } from "../write_gate.ts";
import { WebhookStore } from "../webhooks/webhook_store.ts";
import {
  type AttemptOutcome,
  type AttemptRow,
  type ClaimedDelivery,
  DEFAULT_LEASE_MS,
  DEFAULT_RETRY,
  type Endpoint,
  type EndpointRecord,
  type NewDelivery,
  type OutboxRow,
  type RetryPolicy,
  settleAttempt,
  type Settled,
  type WebhookLog,
  type WebhookLogOptions,
} from "./webhook_log.ts";
import { settle, writeTransaction } from "./sqlite_sync.ts";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS webhook_claims(
  deliveryId TEXT PRIMARY KEY, replica TEXT NOT NULL, claim INTEGER NOT NULL, attempts INTEGER NOT NULL,
  leaseUntil INTEGER NOT NULL);
`;

/** Handles whose earlier processes' claims were dropped (once per handle, before any claim of ours). */
const opened = new WeakSet<DatabaseSync>();

/** The webhook log on a SQLite handle shared with the daemon's `Store` (which stays its owner). */
export class SqliteWebhookLog implements WebhookLog {
  readonly kind = "sqlite";
  #db: DatabaseSync;
  #store: WebhookStore;
  #gate: WriteGate;
  #retry: RetryPolicy;
  #leaseMs: number;
  #s: Record<"due" | "claim" | "live" | "next" | "exists" | "queued", StatementSync>;

  /** @param db the store's handle (`store.db`). */
  constructor(db: DatabaseSync, options: WebhookLogOptions = {}) {
    this.#db = db;
    this.#store = new WebhookStore(db);
    this.#gate = gateOf(db);
    this.#retry = { ...DEFAULT_RETRY, ...options.retry };
    this.#leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    db.exec(SCHEMA);
    if (!opened.has(db)) {
      opened.add(db);
      this.#gate.run(() => db.exec("DELETE FROM webhook_claims"));
    }
    // A claim counts while the outbox row still has the attempt count it was made at.
    const live = "c.attempts = o.attempts AND c.leaseUntil > ?";
    this.#s = {
      due: db.prepare(
        `SELECT o.id, o.endpointId, o.type, o.body, o.createdAt, o.attempts, o.nextAt, o.state,
          e.url, e.secret, c.claim FROM webhook_outbox o
          JOIN webhook_endpoints e ON e.id = o.endpointId
          LEFT JOIN webhook_claims c ON c.deliveryId = o.id
          WHERE o.state = 'pending' AND o.nextAt <= ? AND NOT coalesce(${live}, false)
          ORDER BY o.nextAt, o.id LIMIT ?`,
      ),
      claim: db.prepare(
        `INSERT INTO webhook_claims(deliveryId, replica, claim, attempts, leaseUntil) VALUES (?, ?, ?, ?, ?)
          ON CONFLICT(deliveryId) DO UPDATE SET replica = excluded.replica, claim = excluded.claim,
            attempts = excluded.attempts, leaseUntil = excluded.leaseUntil`,
      ),
      live: db.prepare(
        `SELECT o.attempts, o.createdAt FROM webhook_outbox o JOIN webhook_claims c ON c.deliveryId = o.id
          WHERE o.id = ? AND o.state = 'pending' AND c.replica = ? AND c.claim = ? AND c.attempts = o.attempts`,
      ),
      // The lease's end only matters while it is still the row's claim; any other claim is already over.
      next: db.prepare(
        `SELECT min(CASE WHEN c.attempts = o.attempts AND c.leaseUntil > o.nextAt THEN c.leaseUntil
          ELSE o.nextAt END) AS at FROM webhook_outbox o
          JOIN webhook_endpoints e ON e.id = o.endpointId
          LEFT JOIN webhook_claims c ON c.deliveryId = o.id WHERE o.state = 'pending'`,
      ),
      exists: db.prepare("SELECT 1 AS x FROM webhook_endpoints WHERE id = ?"),
      queued: db.prepare("SELECT 1 AS x FROM webhook_outbox WHERE id = ?"),
    };
  }

  addEndpoint(endpoint: EndpointRecord): Promise<void> {
    return settle(() => this.#gate.run(() => this.#store.addEndpoint(endpoint)));
  }

  list(): Promise<Endpoint[]> {
    return settle(() =>
      this.#store.endpoints().map(({ secret: _, ...e }) => {
        const [last] = this.#store.log(e.id, 1);
        return { ...e, last: last ? { ...last } : null };
      })
    );
  }

  has(id: string): Promise<boolean> {
    return settle(() => this.#s.exists.get(id) !== undefined);
  }

  subscribers(type: string): Promise<string[]> {
    return settle(() =>
      this.#store.endpoints().filter((e) => (e.events as string[]).includes(type)).map((e) => e.id)
    );
  }

  removeEndpoint(id: string): Promise<boolean> {
    return settle(() => this.#gate.run(() => this.#store.removeEndpoint(id)));
  }

  enqueue(rows: readonly NewDelivery[]): Promise<number> {
    return settle(() => {
      // Synchronous from this check to the insert: an endpoint cannot go in between.
      const kept = rows.filter((r) => this.#s.exists.get(r.endpointId) !== undefined);
      const fresh = kept.filter((r) => this.#s.queued.get(r.id) === undefined);
      this.#store.enqueue(kept);
      return fresh.length;
    });
  }

  claimDue(replica: string, now: number, limit: number): Promise<ClaimedDelivery[]> {
    return settle(() =>
      this.#transaction(() => {
        const rows = this.#s.due.all(now, now, limit) as unknown as (OutboxRow & {
          url: string;
          secret: string;
          claim: number | null;
        })[];
        const leaseUntil = now + this.#leaseMs;
        return rows.map((r) => {
          const claim = (r.claim ?? 0) + 1;
          this.#s.claim.run(r.id, replica, claim, r.attempts, leaseUntil);
          return { ...r, claim, replica, leaseUntil };
        });
      })
    );
  }

  recordAttempt(claim: ClaimedDelivery, outcome: AttemptOutcome, now: number): Promise<Settled | null> {
    return settle(() => {
      const row = this.#s.live.get(claim.id, claim.replica, claim.claim) as
        | Pick<OutboxRow, "attempts" | "createdAt">
        | undefined;
      if (!row) return null;
      const next = settleAttempt(row, outcome.ok, now, this.#retry);
      const { ok: _, ...attempt } = outcome;
      // WebhookStore writes the attempt and the row's new state (attempts + 1: the claim ends) in one commit.
      this.#store.record(claim, attempt, next);
      return next;
    });
  }

  nextDue(): Promise<number | null> {
    return settle(() => (this.#s.next.get() as { at: number | null }).at);
  }

  log(endpointId: string, limit = 100): Promise<AttemptRow[]> {
    // Plain objects, as PostgreSQL's are (node:sqlite's rows have no prototype).
    return settle(() => this.#store.log(endpointId, limit).map((r) => ({ ...r })));
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  /** One write transaction through the file's gate (joining the caller's when one is open). */
  #transaction<T>(work: () => T): T {
    return this.#gate.run(() => writeTransaction(this.#db, work));
  }
}
