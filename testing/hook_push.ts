/**
 * What the hook prompt and push log tests share: one database opened as two replicas' logs (SQLite: the
 * daemon's `Store` file and a second handle on it, as another process would have; PostgreSQL: a database on a
 * real server, each replica with pools of its own), reopened as after a restart, and a kept prompt to work on.
 */
import { DatabaseSync } from "node:sqlite";
import { Store } from "../lib/store.ts";
import type { HookPromptLog, PendingPrompt } from "../lib/storage/hook_prompt_log.ts";
import type { PushLog, PushSubscriptionRecord } from "../lib/storage/push_log.ts";
import { SqliteHookPromptLog } from "../lib/storage/sqlite_hook_prompt_log.ts";
import { SqlitePushLog } from "../lib/storage/sqlite_push_log.ts";
import { PgHookPromptLog } from "../lib/storage/pg_hook_prompt_log.ts";
import { PgPushLog } from "../lib/storage/pg_push_log.ts";

/** One replica's logs. */
export interface Replica {
  prompts: HookPromptLog;
  push: PushLog;
}

/** Two replicas on one database. */
export interface Replicas {
  a: Replica;
  b: Replica;
  /** Close both and open them again on the same database, as restarted daemons do. */
  reopen(): Promise<void>;
  close(): Promise<void>;
}

/** A fresh SQLite file in a temp dir: replica A on the store's handle, B on a second handle. */
export async function openSqliteReplicas(): Promise<Replicas> {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-hook-push-" });
  const path = `${dir}/lvmh.db`;
  let store: Store;
  let second: DatabaseSync;
  const open = () => {
    store = new Store(path);
    second = new DatabaseSync(path);
    second.exec("PRAGMA busy_timeout=5000");
    const on = (db: DatabaseSync) => ({ prompts: new SqliteHookPromptLog(db), push: new SqlitePushLog(db) });
    return { a: on(store.db), b: on(second) };
  };
  const shut = async () => {
    for (const r of [opened.a, opened.b]) {
      await r.prompts.close();
      await r.push.close();
    }
    second.close();
    store.close();
  };
  const opened: Replicas = {
    ...open(),
    async reopen() {
      await shut();
      Object.assign(opened, open());
    },
    async close() {
      await shut();
      await Deno.remove(dir, { recursive: true });
    },
  };
  return opened;
}

/** Two replicas on the PostgreSQL database at `url`. */
export async function openPgReplicas(url: string): Promise<Replicas> {
  const one = async (): Promise<Replica> => ({
    prompts: await PgHookPromptLog.open(url, { max: 4 }),
    push: await PgPushLog.open(url, { max: 2 }),
  });
  const open = async () => {
    // Both at once, as replicas starting together: the migration's lock makes them migrate once.
    const [a, b] = await Promise.all([one(), one()]);
    return { a, b };
  };
  const shut = async () => {
    for (const r of [opened.a, opened.b]) {
      await r.prompts.close();
      await r.push.close();
    }
  };
  const opened: Replicas = {
    ...await open(),
    async reopen() {
      await shut();
      Object.assign(opened, await open());
    },
    close: shut,
  };
  return opened;
}

/** A kept follow-up prompt for `sessionId`. */
export function keptPrompt(
  id: string,
  sessionId: string,
  createdAt: number,
  extra: Partial<PendingPrompt> = {},
) {
  return {
    id,
    sessionId,
    message: `please look at ${id}`,
    deliverAs: "followUp",
    actor: "gitlab",
    detail: { pipeline: 7, url: "https://gitlab.example/p/1" },
    spawn: null,
    createdAt,
    sentAfter: null,
    ...extra,
  } satisfies PendingPrompt;
}

/** A browser's subscription. */
export function subscription(
  endpoint: string,
  owner: string,
  kinds: PushSubscriptionRecord["kinds"],
  createdAt: number,
): PushSubscriptionRecord {
  return {
    endpoint: `https://push.example/${endpoint}`,
    p256dh: `p256dh-${endpoint}`,
    auth: `auth-${endpoint}`,
    kinds,
    owner,
    createdAt,
  };
}
