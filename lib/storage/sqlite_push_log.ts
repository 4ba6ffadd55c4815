/**
 * Web push state in the daemon's SQLite file, through lib/notify/push_store.ts itself (the tables and
 * statements stay there, so the file keeps one schema). node:sqlite is synchronous, and `PushStore.keys`
 * inserts if absent and reads back, so even another process on the file ends with the stored pair.
 */
import type { DatabaseSync } from "node:sqlite";
import { PushStore } from "../notify/push_store.ts";
import {
  byAge,
  type NotifyKind,
  type PushLog,
  type PushSubscriptionRecord,
  type PushSubscriptionSummary,
  summary,
  type VapidKeys,
} from "./push_log.ts";
import { settle } from "./sqlite_sync.ts";

/** The push log on a SQLite handle shared with the daemon's `Store` (which stays its owner). */
export class SqlitePushLog implements PushLog {
  readonly kind = "sqlite";
  #store: PushStore;

  /** @param db the store's handle (`store.db`). */
  constructor(db: DatabaseSync) {
    this.#store = new PushStore(db);
  }

  vapidKeys(make: () => VapidKeys): Promise<VapidKeys> {
    return settle(() => this.#store.keys(make));
  }

  upsert(s: PushSubscriptionRecord): Promise<void> {
    return settle(() => this.#store.upsert(s));
  }

  remove(endpoint: string): Promise<boolean> {
    return settle(() => this.#store.remove(endpoint));
  }

  targets(kind: NotifyKind): Promise<PushSubscriptionRecord[]> {
    return settle(() => this.#store.all().filter((s) => s.kinds.includes(kind)).sort(byAge));
  }

  kindsOf(endpoint: string): Promise<NotifyKind[] | null> {
    return settle(() => this.#store.all().find((s) => s.endpoint === endpoint)?.kinds ?? null);
  }

  ofOwner(owner: string): Promise<PushSubscriptionSummary[]> {
    return settle(() => this.#store.all().filter((s) => s.owner === owner).sort(byAge).map(summary));
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
