/**
 * Webhook endpoints and their delivery outbox behind one async interface: the daemon's SQLite file
 * (`sqlite_webhook_log.ts`, over lib/webhooks/webhook_store.ts so the file keeps one schema) and PostgreSQL
 * shared by several replicas (`pg_webhook_log.ts`). Both pass one contract (tests/process/webhook_log_contract_test.ts).
 *
 * What it stores is what lib/webhooks/webhooks.ts keeps today: endpoints with their signing secrets (never in a
 * list), one outbox row per event and endpoint whose id is the `webhook-id` of every attempt, the attempt log
 * the UI shows, retries after 1 s, 2 s, 4 s … capped at 10 minutes, given up after 24 hours. Nothing is pruned:
 * the outbox and the attempt log keep what they kept on SQLite.
 *
 * Run once across replicas: a worker does not read the due rows, it claims them. `claimDue` hands each due
 * delivery to one caller, with a lease; while the lease runs nobody else is handed it, and once it ran out (the
 * claimant was killed, or hangs) the next `claimDue` anywhere takes it again. Every claim has a number, and
 * `recordAttempt` stores an outcome only for the delivery's newest claim while it is still pending: the first
 * claimant's late answer, after another replica took the delivery again, is refused, so each attempt is
 * counted and settled once. A late answer that nobody overtook is kept: refusing it would only send the
 * receiver a repeat. Leases are compared with the callers' clocks, so they must run much longer than the
 * replicas' clocks differ (the default is a minute, attempts time out after 10 s).
 */
import type { AttemptRow, Endpoint, EndpointRecord } from "../protocol.ts";
import type { OutboxRow } from "../webhooks/webhook_store.ts";

export type { AttemptRow, Endpoint, EndpointRecord, OutboxRow };

/** What `enqueue` stores: a delivery as it starts, pending and due at once. */
export type NewDelivery = Pick<OutboxRow, "id" | "endpointId" | "type" | "body" | "createdAt">;

/** A delivery handed to one replica, with what it needs to sign and send it. */
export interface ClaimedDelivery extends OutboxRow {
  /** The claim's number: only the newest claim of a delivery may record its outcome. */
  claim: number;
  /** Who claimed it. */
  replica: string;
  /** Until when (ms epoch) nobody else is handed it. */
  leaseUntil: number;
  /** The endpoint's URL and signing secret. */
  url: string;
  secret: string;
}

/** One attempt's outcome, as lib/webhooks/deliver.ts reports it, and when it started. */
export interface AttemptOutcome {
  at: number;
  ok: boolean;
  status: number | null;
  latencyMs: number;
  error: string | null;
}

/** The retry schedule; the defaults are the documented ones (lib/webhooks/webhooks.ts), tests shorten them. */
export interface RetryPolicy {
  firstRetryMs: number;
  maxRetryMs: number;
  giveUpMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = {
  firstRetryMs: 1000,
  maxRetryMs: 10 * 60_000,
  giveUpMs: 24 * 3600_000,
};

/** How long a claim keeps a delivery from the other replicas unless told otherwise. */
export const DEFAULT_LEASE_MS = 60_000;

/** Options both logs take. */
export interface WebhookLogOptions {
  retry?: Partial<RetryPolicy>;
  leaseMs?: number;
}

/** What a recorded attempt did to its delivery. */
export interface Settled {
  state: OutboxRow["state"];
  /** When it is due again (meaningful while pending). */
  nextAt: number;
}

/**
 * The delivery's next state after an attempt, exactly as lib/webhooks/webhooks.ts decides it: success is
 * delivered; a failure waits `firstRetryMs · 2^attempts` (attempts before this one), capped, and gives up
 * when the next try would come later than `giveUpMs` after the event.
 */
export function settleAttempt(
  delivery: Pick<OutboxRow, "attempts" | "createdAt">,
  ok: boolean,
  now: number,
  policy: RetryPolicy,
): Settled {
  const delay = Math.min(policy.firstRetryMs * 2 ** delivery.attempts, policy.maxRetryMs);
  const expired = now + delay - delivery.createdAt > policy.giveUpMs;
  return { state: ok ? "delivered" : expired ? "failed" : "pending", nextAt: now + delay };
}

/** Every webhook endpoint and delivery of one deployment. */
export interface WebhookLog {
  /** Which database holds it. */
  readonly kind: "sqlite" | "postgres";
  /** Store a new endpoint (its id is fresh: the caller made it). */
  addEndpoint(endpoint: EndpointRecord): Promise<void>;
  /** Every endpoint, oldest first, without its secret, with its latest attempt (null before any). */
  list(): Promise<Endpoint[]>;
  /** Whether the endpoint exists. */
  has(id: string): Promise<boolean>;
  /** The ids of the endpoints that asked for events of `type`, oldest first. */
  subscribers(type: string): Promise<string[]>;
  /** Delete an endpoint and what it still had queued; false when there was none. */
  removeEndpoint(id: string): Promise<boolean>;
  /**
   * Queue deliveries in one transaction (an event reaches all its endpoints or none). A row whose id is
   * already queued is left as it was; one whose endpoint is gone (removed meanwhile) is dropped.
   * @returns how many were queued.
   */
  enqueue(rows: readonly NewDelivery[]): Promise<number>;
  /** Hand up to `limit` pending deliveries due at `now` (ms epoch) to `replica`, oldest due first. */
  claimDue(replica: string, now: number, limit: number): Promise<ClaimedDelivery[]>;
  /**
   * Store one attempt of a claimed delivery and its next state (`settleAttempt`) in one transaction.
   * @returns the new state, or null when refused: the delivery was claimed again since, or is no longer
   *   pending (deleted with its endpoint, or settled by another claim). A refused outcome stores nothing.
   */
  recordAttempt(claim: ClaimedDelivery, outcome: AttemptOutcome, now: number): Promise<Settled | null>;
  /**
   * When the worker should look again: the earliest time a pending delivery becomes claimable (its next
   * attempt, or the end of its lease), or null when nothing is pending.
   */
  nextDue(): Promise<number | null>;
  /** The latest attempts to one endpoint, newest first. */
  log(endpointId: string, limit?: number): Promise<AttemptRow[]>;
  /** Release what the log opened; unusable afterwards. */
  close(): Promise<void>;
}
