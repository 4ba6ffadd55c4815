/**
 * Outbound webhooks, the one owner of endpoints and deliveries: admins register endpoints; every notify event
 * is written to the outbox (one row per matching endpoint) before any attempt, and a worker delivers due rows,
 * retrying after 1 s, 2 s, 4 s … (capped at 10 minutes) for 24 hours, then marks them failed. A delivery keeps
 * its id across attempts and restarts, so a receiver that saw it once can drop the repeat.
 */
import type { NotifyEvent } from "../notify/kinds.ts";
import { NotFoundError } from "../errors.ts";
import { type AttemptRow, type EndpointRecord, type OutboxRow, WebhookStore } from "./webhook_store.ts";
import type { Endpoint, EndpointBody } from "../protocol.ts";
import { attempt } from "./deliver.ts";
import { generateSecret } from "./signing.ts";
import type { DatabaseSync } from "node:sqlite";

export type { Endpoint } from "../protocol.ts";

/** The `type` of a test delivery (not a notify kind: receivers that switch on the kind ignore it). */
export const TEST_TYPE = "webhook.test";

/** Timing of the worker; defaults are the documented ones, tests shorten them. */
export interface WebhookOptions {
  timeoutMs?: number;
  firstRetryMs?: number;
  maxRetryMs?: number;
  giveUpMs?: number;
  /** Deliveries in flight at once, across endpoints. */
  concurrency?: number;
  fetch?: typeof fetch;
}

/** Endpoints, outbox and delivery worker. */
export class Webhooks {
  #store: WebhookStore;
  #opts: Required<Omit<WebhookOptions, "fetch">> & { fetch?: typeof fetch };
  #inFlight = new Map<string, Promise<void>>();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;
  #stop = new AbortController();

  constructor(db: DatabaseSync, options: WebhookOptions = {}) {
    this.#store = new WebhookStore(db);
    this.#opts = {
      timeoutMs: options.timeoutMs ?? 10_000,
      firstRetryMs: options.firstRetryMs ?? 1000,
      maxRetryMs: options.maxRetryMs ?? 10 * 60_000,
      giveUpMs: options.giveUpMs ?? 24 * 3600_000,
      concurrency: options.concurrency ?? 8,
      fetch: options.fetch,
    };
  }

  /** Start delivering: what was pending when the daemon last stopped (or was killed) goes out first. */
  start(): void {
    this.#schedule(0);
  }

  /** Register an endpoint; the answer is the only place its secret is shown. */
  create(body: EndpointBody): EndpointRecord {
    const record: EndpointRecord = {
      id: `wh_${crypto.randomUUID().replaceAll("-", "").slice(0, 20)}`,
      url: body.url,
      events: [...new Set(body.events)],
      secret: body.secret ?? generateSecret(),
      createdAt: Date.now(),
    };
    this.#store.addEndpoint(record);
    return record;
  }

  /** Every endpoint, without secrets, each with its latest attempt. */
  list(): Endpoint[] {
    return this.#store.endpoints().map(({ secret: _, ...e }) => ({
      ...e,
      last: this.#store.log(e.id, 1)[0] ?? null,
    }));
  }

  /**
   * Queue one test delivery to one endpoint, signed and retried like any other.
   * @returns the delivery's id (its `webhook-id`).
   * @throws {NotFoundError} when there is no such endpoint.
   */
  test(id: string, by: string): string {
    if (!this.#store.endpoints().some((e) => e.id === id)) {
      throw new NotFoundError(`no webhook endpoint "${id}"`);
    }
    const at = Date.now();
    const row = {
      id: `msg_${crypto.randomUUID().replaceAll("-", "")}`,
      endpointId: id,
      type: TEST_TYPE,
      body: JSON.stringify({ type: TEST_TYPE, at, sessionId: null, data: { by } }),
      createdAt: at,
    };
    this.#store.enqueue([row]);
    this.#schedule(0);
    return row.id;
  }

  /**
   * Delete an endpoint and its queued deliveries.
   * @throws {NotFoundError} when there is no such endpoint.
   */
  remove(id: string): void {
    if (!this.#store.removeEndpoint(id)) throw new NotFoundError(`no webhook endpoint "${id}"`);
  }

  /**
   * The latest attempts to one endpoint, newest first.
   * @throws {NotFoundError} when there is no such endpoint.
   */
  log(id: string): AttemptRow[] {
    if (!this.#store.endpoints().some((e) => e.id === id)) {
      throw new NotFoundError(`no webhook endpoint "${id}"`);
    }
    return this.#store.log(id);
  }

  /** Queue `event` for every endpoint that asked for its kind (committed before this returns). */
  emit(event: NotifyEvent): void {
    if (this.#closed) return;
    const body = JSON.stringify({
      type: event.type,
      at: event.at,
      sessionId: event.sessionId,
      data: event.data,
    });
    const rows = this.#store.endpoints().filter((e) => e.events.includes(event.type)).map((e) => ({
      id: `msg_${crypto.randomUUID().replaceAll("-", "")}`,
      endpointId: e.id,
      type: event.type,
      body,
      createdAt: Date.now(),
    }));
    if (!rows.length) return;
    this.#store.enqueue(rows);
    this.#schedule(0);
  }

  /** Stop the worker: attempts in flight are cut short and stay pending for the next start. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#stop.abort();
    await Promise.allSettled([...this.#inFlight.values()]);
  }

  #schedule(delayMs: number): void {
    if (this.#closed) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#tick(), Math.max(0, Math.min(delayMs, 2 ** 31 - 1)));
  }

  #tick(): void {
    if (this.#closed) return;
    const free = this.#opts.concurrency - this.#inFlight.size;
    if (free > 0) {
      const now = Date.now();
      const rows = this.#store.due(now, free + this.#inFlight.size).filter((r) => !this.#inFlight.has(r.id));
      for (const row of rows.slice(0, free)) {
        const p = this.#deliver(row).finally(() => {
          this.#inFlight.delete(row.id);
          this.#schedule(0);
        });
        this.#inFlight.set(row.id, p);
      }
    }
    // Rows in flight are still pending; each outcome reschedules, so only the others set the next wake-up.
    if (this.#inFlight.size < this.#opts.concurrency) {
      const waiting = this.#store.due(Number.MAX_SAFE_INTEGER, this.#inFlight.size + 1)
        .find((r) => !this.#inFlight.has(r.id));
      if (waiting) this.#schedule(waiting.nextAt - Date.now());
    }
  }

  async #deliver(row: OutboxRow): Promise<void> {
    const endpoint = this.#store.endpoints().find((e) => e.id === row.endpointId);
    if (!endpoint) return;
    const at = Date.now();
    const result = await attempt(endpoint, row.id, row.body, {
      timeoutMs: this.#opts.timeoutMs,
      fetch: this.#opts.fetch,
      signal: this.#stop.signal,
    });
    // Cut short by shutdown: not an attempt; the row stays pending and goes out again with the same id.
    if (this.#closed) return;
    const delay = Math.min(this.#opts.firstRetryMs * 2 ** row.attempts, this.#opts.maxRetryMs);
    const expired = Date.now() + delay - row.createdAt > this.#opts.giveUpMs;
    const state = result.ok ? "delivered" : expired ? "failed" : "pending";
    this.#store.record(row, { at, ...result }, { state, nextAt: Date.now() + delay });
    if (state === "failed") {
      console.warn(
        `lvmh: webhook delivery ${row.id} (${row.type}) gave up after ${row.attempts + 1} attempts`,
      );
    }
  }
}
