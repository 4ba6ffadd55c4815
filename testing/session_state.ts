/**
 * What the session state tests share: one database opened as two replicas' logs (SQLite: a real file under the
 * daemon's `Store`, both replicas on its handle and on the daemon's one set of table owners, as one daemon's
 * parts; PostgreSQL: a database on a real server, each replica with pools of its own), reopened as after a
 * restart, and a caller's transaction to run a budget raise in (an approval decision's).
 */
import { Store } from "../lib/store.ts";
import { BudgetTable } from "../lib/budget_table.ts";
import { Workspaces } from "../lib/workspaces.ts";
import { ContainerStates } from "../lib/spawn/containers.ts";
import { UsageRuns } from "../lib/usage_runs.ts";
import type { SessionStateLog } from "../lib/storage/session_state_log.ts";
import type { UsageRunLog } from "../lib/storage/usage_run_log.ts";
import { SqliteSessionStateLog } from "../lib/storage/sqlite_session_state_log.ts";
import { SqliteUsageRunLog } from "../lib/storage/sqlite_usage_run_log.ts";
import { PgSessionStateLog } from "../lib/storage/pg_session_state_log.ts";
import { PgUsageRunLog } from "../lib/storage/pg_usage_run_log.ts";
import { connectPostgres } from "../lib/storage/pg_client.ts";
import { closeReplicas } from "./storage_replicas.ts";

/** One replica's logs. */
export interface Replica {
  // deno-lint-ignore no-explicit-any
  state: SessionStateLog<any>;
  usage: UsageRunLog;
}

/** Two replicas on one database. */
export interface Opened {
  a: Replica;
  b: Replica;
  /** Run `writes` (from `raiseBudgetWrites`) in a transaction of the caller's, committed or rolled back. */
  inTransaction(writes: unknown, commit: boolean): Promise<void>;
  /** Close both replicas and open them again on the same database, as restarted daemons do. */
  reopen(): Promise<void>;
  close(): Promise<void>;
}

/** The rollback a test asks for. */
class Rollback extends Error {}

/** A fresh SQLite file in a temp dir; both replicas on the store's handle and owners. */
export async function openSqlite(): Promise<Opened> {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-ss-" });
  const path = `${dir}/lvmh.db`;
  let store = new Store(path);
  const replicas = () => {
    const db = store.db;
    // The daemon's owners, made once per start; UsageRuns makes (and owns) the usage table.
    new UsageRuns(db).close();
    const owners = {
      budgets: new BudgetTable(db),
      workspaces: new Workspaces(db),
      containers: new ContainerStates(db),
    };
    return [
      { state: new SqliteSessionStateLog(db, owners), usage: new SqliteUsageRunLog(db) },
      { state: new SqliteSessionStateLog(db, owners), usage: new SqliteUsageRunLog(db) },
    ];
  };
  const [a, b] = replicas();
  const opened: Opened = {
    a,
    b,
    inTransaction(writes, commit) {
      store.db.exec("BEGIN IMMEDIATE");
      (writes as (db: unknown) => void)(store.db);
      store.db.exec(commit ? "COMMIT" : "ROLLBACK");
      return Promise.resolve();
    },
    async reopen() {
      await closeReplicas(opened.a, opened.b);
      store.close();
      store = new Store(path);
      [opened.a, opened.b] = replicas();
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
export async function openPg(url: string): Promise<Opened> {
  const replica = async (): Promise<Replica> => ({
    state: await PgSessionStateLog.open(url, { max: 3 }),
    usage: await PgUsageRunLog.open(url, { max: 2 }),
  });
  const raw = connectPostgres(url, { max: 1 });
  const opened: Opened = {
    a: await replica(),
    b: await replica(),
    async inTransaction(writes, commit) {
      try {
        await raw.begin(async (tx) => {
          await (writes as (tx: unknown) => Promise<unknown>)(tx);
          if (!commit) throw new Rollback();
        });
      } catch (error) {
        if (!(error instanceof Rollback)) throw error;
      }
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
