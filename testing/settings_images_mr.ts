/**
 * What the settings, image and merge request log tests share: one database opened as two replicas' logs
 * (SQLite: a real file under the daemon's `Store`, both replicas on its handle; PostgreSQL: a database on a
 * real server, each replica with pools of its own), reopened as after a restart, and counted behind the
 * logs' backs (how many image blobs are stored, to see deduplication and deletion).
 */
import { Store } from "../lib/store.ts";
import type { SettingsLog } from "../lib/storage/settings_log.ts";
import type { ImageLog } from "../lib/storage/image_log.ts";
import type { MergeRequestLog } from "../lib/storage/merge_request_log.ts";
import { SqliteSettingsLog } from "../lib/storage/sqlite_settings_log.ts";
import { SqliteImageLog } from "../lib/storage/sqlite_image_log.ts";
import { SqliteMergeRequestLog } from "../lib/storage/sqlite_merge_request_log.ts";
import { PgSettingsLog } from "../lib/storage/pg_settings_log.ts";
import { PgImageLog } from "../lib/storage/pg_image_log.ts";
import { PgMergeRequestLog } from "../lib/storage/pg_merge_request_log.ts";
import { connectPostgres } from "../lib/storage/pg_client.ts";
import { closeReplicas } from "./storage_replicas.ts";

/** One replica's logs. */
export interface Replica {
  settings: SettingsLog;
  images: ImageLog;
  // deno-lint-ignore no-explicit-any
  mrs: MergeRequestLog<any>;
}

/** Two replicas on one database. */
export interface Opened {
  a: Replica;
  b: Replica;
  /** How many distinct images (blobs) the database holds. */
  blobs(): Promise<number>;
  /** Close both replicas and open them again on the same database, as restarted daemons do. */
  reopen(): Promise<void>;
  close(): Promise<void>;
}

/** A fresh SQLite file in a temp dir; both replicas on the store's handle (one daemon, two of its parts). */
export async function openSqlite(): Promise<Opened> {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-sim-" });
  const path = `${dir}/lvmh.db`;
  let store = new Store(path);
  const replica = (): Replica => ({
    settings: new SqliteSettingsLog(store),
    images: new SqliteImageLog(store.db),
    mrs: new SqliteMergeRequestLog(store.db),
  });
  const opened: Opened = {
    a: replica(),
    b: replica(),
    blobs: () =>
      Promise.resolve((store.db.prepare("SELECT count(*) AS n FROM image_blobs").get() as { n: number }).n),
    async reopen() {
      await closeReplicas(opened.a, opened.b);
      store.close();
      store = new Store(path);
      opened.a = replica();
      opened.b = replica();
    },
    async close() {
      await closeReplicas(opened.a, opened.b);
      store.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
  return opened;
}

/** Two replicas' logs on the PostgreSQL database at `url`. */
export async function openPg(url: string, options: { sweepMs?: number } = {}): Promise<Opened> {
  const replica = async (): Promise<Replica> => ({
    settings: await PgSettingsLog.open(url, { max: 2, ...options }),
    images: await PgImageLog.open(url, { max: 2 }),
    mrs: await PgMergeRequestLog.open(url, { max: 2 }),
  });
  const raw = connectPostgres(url, { max: 1 });
  const opened: Opened = {
    a: await replica(),
    b: await replica(),
    async blobs() {
      const [row] = await raw`SELECT count(*)::integer AS n FROM image_blobs`;
      return row.n as number;
    },
    async reopen() {
      await closeReplicas(opened.a, opened.b);
      opened.a = await replica();
      opened.b = await replica();
    },
    async close() {
      await closeReplicas(opened.a, opened.b);
      await raw.end();
    },
  };
  return opened;
}

/** A subscription kept for a whole case, recording every key it hears. */
export interface Hearing {
  /** Every call's keys, in order. */
  calls: string[][];
  /** Resolves with the ms until `key` is heard from now on, rejects past the deadline. */
  next(key: string, deadlineMs: number): Promise<number>;
  stop(): void;
}

/** Subscribe to `log`'s changes; resolves once the subscription is ready. */
export async function hear(log: SettingsLog): Promise<Hearing> {
  const calls: string[][] = [];
  const waiting = new Set<{ key: string; done: () => void }>();
  const stop = log.changed((keys) => {
    calls.push(keys);
    for (const w of [...waiting]) if (keys.includes(w.key)) w.done();
  });
  await stop.ready;
  return {
    calls,
    stop,
    next(key, deadlineMs) {
      const t0 = performance.now();
      return new Promise((resolve, reject) => {
        const w = {
          key,
          done: () => {
            clearTimeout(timer);
            waiting.delete(w);
            resolve(performance.now() - t0);
          },
        };
        const timer = setTimeout(() => {
          waiting.delete(w);
          reject(new Error(`${key} not heard within ${deadlineMs} ms`));
        }, deadlineMs);
        waiting.add(w);
      });
    },
  };
}
