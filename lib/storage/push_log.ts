/**
 * Web push state behind one async interface: the daemon's SQLite file (`sqlite_push_log.ts`, over
 * lib/notify/push_store.ts itself, so the file keeps one schema) and PostgreSQL shared by several replicas
 * (`pg_push_log.ts`). Both pass one contract (tests/process/hook_push_contract_test.ts).
 *
 * The VAPID key pair is made once per deployment: browsers subscribed with its public key, and a push signed
 * by another pair is refused by the push service. Replicas starting together may each make a pair, but only
 * the first stored is kept (insert if absent, then read back), and every replica signs with that one.
 *
 * The private key is a secret: only `vapidKeys` returns it (to the sender, which signs with it); nothing that
 * lists subscriptions does. A listing for people (`ofOwner`) also leaves out each browser's own keys.
 */
import type { PushSubscriptionRecord } from "../notify/push_store.ts";
import type { NotifyKind } from "../notify/kinds.ts";

export type { NotifyKind, PushSubscriptionRecord };

/** The deployment's VAPID key pair (URL-safe base64, as lib/notify/web_push.ts makes it). */
export interface VapidKeys {
  publicKey: string;
  privateKey: string;
}

/** A subscription as its owner may see it: without the browser's encryption keys. */
export type PushSubscriptionSummary = Omit<PushSubscriptionRecord, "p256dh" | "auth">;

/** The deployment's VAPID keys and every browser's push subscription. */
export interface PushLog {
  /** Which database holds them. */
  readonly kind: "sqlite" | "postgres";
  /**
   * The key pair, made by `make` when there is none yet and kept from then on. Of replicas making one at once,
   * all are handed the one that was stored first.
   */
  vapidKeys(make: () => VapidKeys): Promise<VapidKeys>;
  /** Add or replace a subscription by endpoint (a browser subscribing again keeps one row, and its age). */
  upsert(s: PushSubscriptionRecord): Promise<void>;
  /** Delete a subscription (unsubscribed, or the push service said 404/410); false when there was none. */
  remove(endpoint: string): Promise<boolean>;
  /** The subscriptions that asked for `kind`, with what a push to each needs, oldest first. */
  targets(kind: NotifyKind): Promise<PushSubscriptionRecord[]>;
  /** The kinds one browser asked for, or null when it has no subscription. */
  kindsOf(endpoint: string): Promise<NotifyKind[] | null>;
  /** The subscriptions a token made, oldest first. */
  ofOwner(owner: string): Promise<PushSubscriptionSummary[]>;
  /** Release what the log opened; unusable afterwards. */
  close(): Promise<void>;
}

/** Oldest first, ties by endpoint, alike on both stores. */
export function byAge<T extends { createdAt: number; endpoint: string }>(a: T, b: T): number {
  return a.createdAt - b.createdAt || (a.endpoint < b.endpoint ? -1 : a.endpoint > b.endpoint ? 1 : 0);
}

/** A record as a listing for people shows it. */
export function summary(s: PushSubscriptionRecord): PushSubscriptionSummary {
  return { endpoint: s.endpoint, kinds: s.kinds, owner: s.owner, createdAt: s.createdAt };
}
