/**
 * The web push tables, in the store's SQLite file: the daemon's VAPID key pair (made once) and each browser's
 * push subscription with the kinds it asked for. Only `lib/notify/push.ts` calls this.
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import type { NotifyKind } from "./kinds.ts";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS push_keys(id INTEGER PRIMARY KEY CHECK (id = 1), publicKey TEXT NOT NULL,
  privateKey TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS push_subscriptions(
  endpoint TEXT PRIMARY KEY, p256dh TEXT NOT NULL, auth TEXT NOT NULL, kinds TEXT NOT NULL,
  owner TEXT NOT NULL, createdAt INTEGER NOT NULL);
`;

/** One browser's subscription. */
export interface PushSubscriptionRecord {
  endpoint: string;
  p256dh: string;
  auth: string;
  kinds: NotifyKind[];
  /** The token name that subscribed. */
  owner: string;
  createdAt: number;
}

/** SQL for web push. */
export class PushStore {
  #s: Record<string, StatementSync>;

  constructor(db: DatabaseSync) {
    db.exec(SCHEMA);
    this.#s = {
      keys: db.prepare("SELECT publicKey, privateKey FROM push_keys WHERE id = 1"),
      setKeys: db.prepare("INSERT OR IGNORE INTO push_keys(id, publicKey, privateKey) VALUES (1, ?, ?)"),
      upsert: db.prepare(
        "INSERT INTO push_subscriptions(endpoint, p256dh, auth, kinds, owner, createdAt) VALUES (?, ?, ?, ?, ?, ?) " +
          "ON CONFLICT(endpoint) DO UPDATE SET p256dh = excluded.p256dh, auth = excluded.auth, " +
          "kinds = excluded.kinds, owner = excluded.owner",
      ),
      all: db.prepare("SELECT endpoint, p256dh, auth, kinds, owner, createdAt FROM push_subscriptions"),
      del: db.prepare("DELETE FROM push_subscriptions WHERE endpoint = ?"),
    };
  }

  /** The VAPID key pair, made by `make` on first use and kept from then on. */
  keys(make: () => { publicKey: string; privateKey: string }): { publicKey: string; privateKey: string } {
    const have = this.#s.keys.get() as { publicKey: string; privateKey: string } | undefined;
    if (have) return { publicKey: have.publicKey, privateKey: have.privateKey };
    const made = make();
    this.#s.setKeys.run(made.publicKey, made.privateKey);
    // Another process may have won the insert; what is stored is what counts.
    return this.keys(make);
  }

  /** Add or replace a subscription (a browser re-subscribing keeps one row). */
  upsert(s: PushSubscriptionRecord): void {
    this.#s.upsert.run(s.endpoint, s.p256dh, s.auth, JSON.stringify(s.kinds), s.owner, s.createdAt);
  }

  /** Every subscription. */
  all(): PushSubscriptionRecord[] {
    return (this.#s.all.all() as unknown as (Omit<PushSubscriptionRecord, "kinds"> & { kinds: string })[])
      .map((r) => ({ ...r, kinds: JSON.parse(r.kinds) }));
  }

  /** Delete a subscription; false when there was none. */
  remove(endpoint: string): boolean {
    return this.#s.del.run(endpoint).changes > 0;
  }
}
