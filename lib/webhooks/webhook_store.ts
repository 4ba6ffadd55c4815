/**
 * The webhook tables, in the store's SQLite file: endpoints, the outbox (one row per event and endpoint, whose
 * id is the `webhook-id` every attempt carries) and the attempt log. Only `lib/webhooks/webhooks.ts` calls this;
 * each change is one statement or one transaction, so a SIGKILL leaves a delivery pending, never half-written.
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import { gateOf, type WriteGate } from "../write_gate.ts";
import type { AttemptRow, EndpointRecord } from "../protocol.ts";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS webhook_endpoints(
  id TEXT PRIMARY KEY, url TEXT NOT NULL, events TEXT NOT NULL, secret TEXT NOT NULL, createdAt INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS webhook_outbox(
  id TEXT PRIMARY KEY, endpointId TEXT NOT NULL, type TEXT NOT NULL, body TEXT NOT NULL,
  createdAt INTEGER NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, nextAt INTEGER NOT NULL,
  state TEXT NOT NULL DEFAULT 'pending', lastStatus INTEGER, lastError TEXT, doneAt INTEGER);
CREATE INDEX IF NOT EXISTS webhook_outbox_due ON webhook_outbox(state, nextAt);
CREATE TABLE IF NOT EXISTS webhook_attempts(
  seq INTEGER PRIMARY KEY AUTOINCREMENT, deliveryId TEXT NOT NULL, endpointId TEXT NOT NULL, type TEXT NOT NULL,
  at INTEGER NOT NULL, status INTEGER, latencyMs INTEGER NOT NULL, error TEXT);
CREATE INDEX IF NOT EXISTS webhook_attempts_by_endpoint ON webhook_attempts(endpointId, seq);
`;

// The endpoint and attempt shapes are wire types the browser shares: they live in lib/protocol.ts.
export type { AttemptRow, EndpointRecord };

/** One queued delivery. */
export interface OutboxRow {
  id: string;
  endpointId: string;
  type: string;
  body: string;
  createdAt: number;
  attempts: number;
  nextAt: number;
  state: "pending" | "delivered" | "failed";
}

/** SQL for webhooks. */
export class WebhookStore {
  #s: Record<string, StatementSync>;

  /** The file's write gate (lib/write_gate.ts): the outbox's writes fail at once while the file refuses them. */
  #gate: WriteGate;

  #db: DatabaseSync;

  constructor(db: DatabaseSync) {
    this.#db = db;
    this.#gate = gateOf(db);
    db.exec(SCHEMA);
    this.#s = {
      addEndpoint: db.prepare(
        "INSERT INTO webhook_endpoints(id, url, events, secret, createdAt) VALUES (?, ?, ?, ?, ?)",
      ),
      endpoints: db.prepare(
        "SELECT id, url, events, secret, createdAt FROM webhook_endpoints ORDER BY createdAt",
      ),
      delEndpoint: db.prepare("DELETE FROM webhook_endpoints WHERE id = ?"),
      delPending: db.prepare("DELETE FROM webhook_outbox WHERE endpointId = ? AND state = 'pending'"),
      enqueue: db.prepare(
        "INSERT OR IGNORE INTO webhook_outbox(id, endpointId, type, body, createdAt, nextAt) VALUES (?, ?, ?, ?, ?, ?)",
      ),
      due: db.prepare(
        "SELECT id, endpointId, type, body, createdAt, attempts, nextAt, state FROM webhook_outbox " +
          "WHERE state = 'pending' AND nextAt <= ? ORDER BY nextAt LIMIT ?",
      ),
      attempt: db.prepare(
        "INSERT INTO webhook_attempts(deliveryId, endpointId, type, at, status, latencyMs, error) " +
          "VALUES (?, ?, ?, ?, ?, ?, ?)",
      ),
      settle: db.prepare(
        "UPDATE webhook_outbox SET attempts = attempts + 1, state = ?, nextAt = ?, lastStatus = ?, lastError = ?, " +
          "doneAt = ? WHERE id = ?",
      ),
      log: db.prepare(
        "SELECT a.deliveryId, a.type, a.at, a.status, a.latencyMs, a.error, COALESCE(o.state, 'gone') AS state " +
          "FROM webhook_attempts a LEFT JOIN webhook_outbox o ON o.id = a.deliveryId " +
          "WHERE a.endpointId = ? ORDER BY a.seq DESC LIMIT ?",
      ),
    };
  }

  /** Store a new endpoint. */
  addEndpoint(e: EndpointRecord): void {
    this.#s.addEndpoint.run(e.id, e.url, JSON.stringify(e.events), e.secret, e.createdAt);
  }

  /** Every endpoint, oldest first. */
  endpoints(): EndpointRecord[] {
    return (this.#s.endpoints.all() as unknown as (Omit<EndpointRecord, "events"> & { events: string })[])
      .map((r) => ({ ...r, events: JSON.parse(r.events) }));
  }

  /** Delete an endpoint and what it still had queued; false when there was none. */
  removeEndpoint(id: string): boolean {
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      const n = this.#s.delEndpoint.run(id).changes;
      this.#s.delPending.run(id);
      this.#db.exec("COMMIT");
      return n > 0;
    } catch (error) {
      if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
      throw error;
    }
  }

  /** Queue one delivery per endpoint in one transaction, so an event reaches all of them or none. */
  enqueue(rows: Pick<OutboxRow, "id" | "endpointId" | "type" | "body" | "createdAt">[]): void {
    if (!rows.length) return;
    this.#gate.run(() => this.#enqueue(rows));
  }

  #enqueue(rows: Pick<OutboxRow, "id" | "endpointId" | "type" | "body" | "createdAt">[]): void {
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      for (const r of rows) this.#s.enqueue.run(r.id, r.endpointId, r.type, r.body, r.createdAt, r.createdAt);
      this.#db.exec("COMMIT");
    } catch (error) {
      if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
      throw error;
    }
  }

  /** Pending deliveries due at `now`, oldest first. */
  due(now: number, limit: number): OutboxRow[] {
    return this.#s.due.all(now, limit) as unknown as OutboxRow[];
  }

  /** Record an attempt and the delivery's new state in one transaction. */
  record(
    row: OutboxRow,
    attempt: { at: number; status: number | null; latencyMs: number; error: string | null },
    next: { state: OutboxRow["state"]; nextAt: number },
  ): void {
    this.#gate.run(() => this.#record(row, attempt, next));
  }

  #record(
    row: OutboxRow,
    attempt: { at: number; status: number | null; latencyMs: number; error: string | null },
    next: { state: OutboxRow["state"]; nextAt: number },
  ): void {
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      this.#s.attempt.run(
        row.id,
        row.endpointId,
        row.type,
        attempt.at,
        attempt.status,
        attempt.latencyMs,
        attempt.error,
      );
      const done = next.state === "pending" ? null : attempt.at;
      this.#s.settle.run(next.state, next.nextAt, attempt.status, attempt.error, done, row.id);
      this.#db.exec("COMMIT");
    } catch (error) {
      if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
      throw error;
    }
  }

  /** The latest attempts to one endpoint, newest first. */
  log(endpointId: string, limit = 100): AttemptRow[] {
    return this.#s.log.all(endpointId, limit) as unknown as AttemptRow[];
  }
}
