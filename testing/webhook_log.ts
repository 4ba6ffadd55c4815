/**
 * What the webhook log tests share: one database opened as two replicas' logs (SQLite: a real file under the
 * daemon's `Store`; PostgreSQL: a database on a real server), reopened as after a restart, and endpoint and
 * delivery builders.
 */
import { Store } from "../lib/store.ts";
import type {
  EndpointRecord,
  NewDelivery,
  WebhookLog,
  WebhookLogOptions,
} from "../lib/storage/webhook_log.ts";
import { SqliteWebhookLog } from "../lib/storage/sqlite_webhook_log.ts";
import { PgWebhookLog } from "../lib/storage/pg_webhook_log.ts";

/** Two logs on one database. */
export interface OpenedLogs {
  log: WebhookLog;
  other: WebhookLog;
  /** Close both logs and open them again on the same database, as a restarted daemon does. */
  reopen(): Promise<void>;
  close(): Promise<void>;
}

/** Opens two logs with the given options. */
export type Opener = (options?: WebhookLogOptions) => Promise<OpenedLogs>;

/** A fresh SQLite file in a temp dir, with two logs on the store's handle (one daemon, two of its parts). */
export async function openSqliteLogs(options: WebhookLogOptions = {}): Promise<OpenedLogs> {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-webhooks-" });
  const path = `${dir}/lvmh.db`;
  let store = new Store(path);
  const opened: OpenedLogs = {
    log: new SqliteWebhookLog(store.db, options),
    other: new SqliteWebhookLog(store.db, options),
    async reopen() {
      await opened.log.close();
      await opened.other.close();
      store.close();
      store = new Store(path);
      opened.log = new SqliteWebhookLog(store.db, options);
      opened.other = new SqliteWebhookLog(store.db, options);
    },
    async close() {
      await opened.log.close();
      await opened.other.close();
      store.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
  return opened;
}

/** Two replicas' logs on the PostgreSQL database at `url`, each with a pool of its own. */
export async function openPgLogs(url: string, options: WebhookLogOptions = {}): Promise<OpenedLogs> {
  const open = () => PgWebhookLog.open(url, { max: 4, ...options });
  const opened: OpenedLogs = {
    log: await open(),
    other: await open(),
    async reopen() {
      await opened.log.close();
      await opened.other.close();
      opened.log = await open();
      opened.other = await open();
    },
    async close() {
      await opened.log.close();
      await opened.other.close();
    },
  };
  return opened;
}

/** A valid `whsec_` secret unique to `id` (24 bytes of base64). */
export function secretFor(id: string): string {
  return `whsec_${btoa(id.padEnd(24, "x").slice(0, 24))}`;
}

/** An endpoint record as `Webhooks.create` makes one. */
export function endpoint(id: string, events: string[], createdAt: number): EndpointRecord {
  return {
    id,
    url: `http://127.0.0.1:9/${id}`,
    events: events as EndpointRecord["events"],
    secret: secretFor(id),
    createdAt,
  };
}

/** A delivery of a notify event as `Webhooks.emit` queues it. */
export function delivery(
  id: string,
  endpointId: string,
  createdAt: number,
  type = "run.settled",
): NewDelivery {
  return {
    id,
    endpointId,
    type,
    body: JSON.stringify({ type, at: createdAt, sessionId: "s", data: { n: id } }),
    createdAt,
  };
}

/** A successful or failed attempt that started at `at`. */
export function outcome(ok: boolean, at: number) {
  return ok
    ? { at, ok, status: 200, latencyMs: 3, error: null }
    : { at, ok, status: 503, latencyMs: 5, error: "HTTP 503: busy" };
}
