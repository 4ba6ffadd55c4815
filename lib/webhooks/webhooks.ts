/**
 * Outbound webhooks, the one owner of endpoints and deliveries: admins register endpoints; every notify event
 * is written to the outbox (one row per matching endpoint) before any attempt, and a worker delivers due rows,
 * retrying after 1 s, 2 s, 4 s … (capped at 10 minutes) for 24 hours, then marks them failed. A delivery keeps
 * its id across attempts and restarts, so a receiver that saw it once can drop the repeat.
 *
 * The state is a `WebhookLog` (lib/storage/webhook_log.ts): the daemon's SQLite file, or PostgreSQL shared by
 * several replicas. The worker never reads due rows, it claims them (`claimDue`, with a lease) and records each
 * outcome for its claim (`recordAttempt`, refused once another replica claimed the delivery again), so with
 * several replicas each delivery is attempted by one of them at a time and settled once; a replica killed
 * mid-attempt leaves its claim to run out, and another one sends the delivery again, with the same id.
 */
import type { NotifyEvent } from "../notify/kinds.ts";
import { NotFoundError } from "../errors.ts";
import type {
  AttemptRow,
  ClaimedDelivery,
  EndpointRecord,
  NewDelivery,
  WebhookLog,
} from "../storage/webhook_log.ts";
import type { Endpoint, EndpointBody } from "../protocol.ts";
import { attempt } from "./deliver.ts";
import { generateSecret } from "./signing.ts";

export type { Endpoint } from "../protocol.ts";

/** The `type` of a test delivery (not a notify kind: receivers that switch on the kind ignore it). */
export const TEST_TYPE = "webhook.test";

/** How often the worker looks for due deliveries it was not told about (another replica queued them). */
export const WEBHOOK_POLL_MS = 1000;

/**
 * Timing of the worker; defaults are the documented ones, tests shorten them. The retry schedule and the
 * lease belong to the log (lib/storage/webhook_log.ts `WebhookLogOptions`).
 */
export interface WebhookOptions {
  timeoutMs?: number;
  /** Deliveries in flight at once, across endpoints. */
  concurrency?: number;
  /** Who claims deliveries (`LVMH_REPLICA_ID`). */
  replica?: string;
  /** The longest wait between two looks at the log (other replicas' new rows, expired leases). */
  pollMs?: number;
  fetch?: typeof fetch;
}

/** Endpoints, outbox and delivery worker. */
export class Webhooks {
  #log: WebhookLog;
  #opts: Required<Omit<WebhookOptions, "fetch">> & { fetch?: typeof fetch };
  #inFlight = new Map<string, Promise<void>>();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #started = false;
  #closed = false;
  #ticking: Promise<void> | null = null;
  #again = false;
  #stop = new AbortController();

  constructor(log: WebhookLog, options: WebhookOptions = {}) {
    this.#log = log;
    this.#opts = {
      timeoutMs: options.timeoutMs ?? 10_000,
      concurrency: options.concurrency ?? 8,
      replica: options.replica ?? "lvmh",
      pollMs: options.pollMs ?? WEBHOOK_POLL_MS,
      fetch: options.fetch,
    };
  }

  /** Start delivering: what was pending when the daemon last stopped (or was killed) goes out first. */
  start(): void {
    this.#started = true;
    this.#schedule(0);
  }

  /** Register an endpoint; the answer is the only place its secret is shown. */
  async create(body: EndpointBody): Promise<EndpointRecord> {
    const record: EndpointRecord = {
      id: `wh_${crypto.randomUUID().replaceAll("-", "").slice(0, 20)}`,
      url: body.url,
      events: [...new Set(body.events)],
      secret: body.secret ?? generateSecret(),
      createdAt: Date.now(),
    };
    await this.#log.addEndpoint(record);
    return record;
  }

  /** Every endpoint, without secrets, each with its latest attempt. */
  list(): Promise<Endpoint[]> {
    return this.#log.list();
  }

  /**
   * Queue one test delivery to one endpoint, signed and retried like any other.
   * @returns the delivery's id (its `webhook-id`).
   * @throws {NotFoundError} when there is no such endpoint.
   */
  async test(id: string, by: string): Promise<string> {
    const at = Date.now();
    const row: NewDelivery = {
      id: `msg_${crypto.randomUUID().replaceAll("-", "")}`,
      endpointId: id,
      type: TEST_TYPE,
      body: JSON.stringify({ type: TEST_TYPE, at, sessionId: null, data: { by } }),
      createdAt: at,
    };
    // The log drops a row whose endpoint is gone, in the same statement: nothing can remove it in between.
    if (await this.#log.enqueue([row]) === 0) throw new NotFoundError(`no webhook endpoint "${id}"`);
    this.#schedule(0);
    return row.id;
  }

  /**
   * Delete an endpoint and its queued deliveries.
   * @throws {NotFoundError} when there is no such endpoint.
   */
  async remove(id: string): Promise<void> {
    if (!await this.#log.removeEndpoint(id)) throw new NotFoundError(`no webhook endpoint "${id}"`);
  }

  /**
   * The latest attempts to one endpoint, newest first.
   * @throws {NotFoundError} when there is no such endpoint.
   */
  async log(id: string): Promise<AttemptRow[]> {
    if (!await this.#log.has(id)) throw new NotFoundError(`no webhook endpoint "${id}"`);
    return await this.#log.log(id);
  }

  /**
   * Queue `event` for every endpoint that asked for its kind (committed when the promise resolves). With a
   * `key` (what happened, named the same on every replica that saw it) each delivery's id is made from it and
   * the endpoint, so copies of one happening queued by several replicas are stored, and delivered, once.
   */
  async emit(event: NotifyEvent): Promise<void> {
    const key = event.key;
    if (this.#closed) return;
    const body = JSON.stringify({
      type: event.type,
      at: event.at,
      sessionId: event.sessionId,
      data: event.data,
    });
    const endpoints = await this.#log.subscribers(event.type);
    if (!endpoints.length) return;
    const rows: NewDelivery[] = [];
    for (const endpointId of endpoints) {
      rows.push({
        id: key ? await keyedId(key, endpointId) : `msg_${crypto.randomUUID().replaceAll("-", "")}`,
        endpointId,
        type: event.type,
        body,
        createdAt: Date.now(),
      });
    }
    await this.#log.enqueue(rows);
    this.#schedule(0);
  }

  /** Stop the worker: attempts in flight are cut short and stay pending (their claim runs out). */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#stop.abort();
    await this.#ticking;
    await Promise.allSettled([...this.#inFlight.values()]);
  }

  #schedule(delayMs: number): void {
    if (this.#closed || !this.#started) return;
    clearTimeout(this.#timer);
    const wait = Math.max(0, Math.min(delayMs, this.#opts.pollMs));
    this.#timer = setTimeout(() => this.#tick(), wait);
  }

  /** One look at the log at a time; a wake-up during one makes another right after it. */
  #tick(): void {
    if (this.#closed) return;
    if (this.#ticking) {
      this.#again = true;
      return;
    }
    this.#ticking = this.#look().catch((error) => {
      // The database is away: look again at the next poll.
      console.error(`lvmh: webhook worker: ${(error as Error).message}`);
      return this.#opts.pollMs;
    }).then((next) => {
      this.#ticking = null;
      if (this.#again) {
        this.#again = false;
        next = 0;
      }
      this.#schedule(next);
    });
  }

  /** Claim what is due, start it, and say when to look next. */
  async #look(): Promise<number> {
    const free = this.#opts.concurrency - this.#inFlight.size;
    // Every slot busy: each outcome reschedules.
    if (free <= 0) return this.#opts.pollMs;
    const claimed = await this.#log.claimDue(this.#opts.replica, Date.now(), free);
    for (const row of claimed) {
      const p = this.#deliver(row).catch((error) => {
        // The outcome could not be stored: the claim runs out and the delivery goes out again, same id.
        console.error(`lvmh: webhook delivery ${row.id}: ${(error as Error).message}`);
      }).finally(() => {
        this.#inFlight.delete(row.id);
        this.#schedule(0);
      });
      this.#inFlight.set(row.id, p);
    }
    if (claimed.length === free) return 0;
    // Rows in flight here are claimed by us: each outcome reschedules, so only the others set the wake-up.
    const next = await this.#log.nextDue();
    return next === null ? this.#opts.pollMs : next - Date.now();
  }

  async #deliver(row: ClaimedDelivery): Promise<void> {
    const at = Date.now();
    const result = await attempt(row, row.id, row.body, {
      timeoutMs: this.#opts.timeoutMs,
      fetch: this.#opts.fetch,
      signal: this.#stop.signal,
    });
    // Cut short by shutdown: not an attempt; the row stays pending and goes out again with the same id.
    if (this.#closed) return;
    const settled = await this.#log.recordAttempt(row, { at, ...result }, Date.now());
    if (settled?.state === "failed") {
      console.warn(
        `lvmh: webhook delivery ${row.id} (${row.type}) gave up after ${row.attempts + 1} attempts`,
      );
    }
  }
}

/** A delivery id made from a happening's natural key and the endpoint (the same on every replica). */
async function keyedId(key: string, endpointId: string): Promise<string> {
  const data = new TextEncoder().encode(`${key}\n${endpointId}`);
  const hash = new Uint8Array(await crypto.subtle.digest("SHA-256", data));
  return `msg_${Array.from(hash.subarray(0, 16), (b) => b.toString(16).padStart(2, "0")).join("")}`;
}
