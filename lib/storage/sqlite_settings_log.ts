/**
 * Settings in the daemon's SQLite file, over the tables and statements the daemon has today: the store's keys
 * through `Store.getSetting/setSetting/deleteSetting` (table `settings`), the hooks' through `HookStore`
 * (table `hook_settings`, under the name without `HOOK_PREFIX`), so SQLite keeps one schema. One daemon owns
 * the file and nothing else writes these tables, so a change is told in process, after its commit, to every
 * settings log on the same handle; no sweep is needed.
 */
import type { DatabaseSync } from "node:sqlite";
import type { Store } from "../store.ts";
import { HookStore } from "../hooks/hook_store.ts";
import {
  entryOf,
  HOOK_PREFIX,
  type OnSettingsChanged,
  type SettingEntry,
  type SettingsLog,
  type SettingsSubscription,
} from "./settings_log.ts";
import { settle } from "./sqlite_sync.ts";

/** Every settings log on a handle, for the in-process hint. */
const logsOf = new WeakMap<DatabaseSync, Set<SqliteSettingsLog>>();

/** The settings log over the daemon's `Store` (which stays the file's owner). */
export class SqliteSettingsLog implements SettingsLog {
  readonly kind = "sqlite";
  #store: Pick<Store, "db" | "gate" | "getSetting" | "setSetting" | "deleteSetting">;
  #hooks: HookStore;
  #subscribers = new Set<OnSettingsChanged>();

  constructor(store: Pick<Store, "db" | "gate" | "getSetting" | "setSetting" | "deleteSetting">) {
    this.#store = store;
    this.#hooks = new HookStore(store.db);
    let logs = logsOf.get(store.db);
    if (!logs) logsOf.set(store.db, logs = new Set());
    logs.add(this);
  }

  get(key: string): Promise<string | null> {
    return settle(() => this.#get(key));
  }

  getMany(keys: readonly string[]): Promise<Record<string, string | null>> {
    // Synchronous reads with nothing in between: one state, as one transaction would give.
    return settle(() => Object.fromEntries(keys.map((key) => [key, this.#get(key)])));
  }

  put(changes: Record<string, string | null>): Promise<void> {
    const keys = Object.keys(changes);
    if (!keys.length) return Promise.resolve();
    const db = this.#store.db;
    return settle(() => {
      this.#store.gate.run(() => {
        db.exec("BEGIN IMMEDIATE");
        try {
          for (const key of keys) this.#set(key, changes[key]);
          db.exec("COMMIT");
        } catch (error) {
          if (db.isTransaction) db.exec("ROLLBACK");
          throw error;
        }
      });
      // Committed: every log on this handle tells its subscribers once the caller has its answer.
      for (const log of logsOf.get(db) ?? []) {
        for (const fn of log.#subscribers) queueMicrotask(() => call(fn, [...keys].sort()));
      }
    });
  }

  list(): Promise<SettingEntry[]> {
    return settle(() => {
      // Key names only: each value goes through its store, and a secret's leaves this module as null.
      const names = (table: string) =>
        (this.#store.db.prepare(`SELECT key FROM ${table} ORDER BY key`).all() as { key: string }[])
          .map((r) => r.key);
      const keys = [...names("settings"), ...names("hook_settings").map((k) => HOOK_PREFIX + k)].sort();
      const entries: SettingEntry[] = [];
      for (const key of keys) {
        const value = this.#get(key);
        if (value !== null) entries.push(entryOf(key, value));
      }
      return entries;
    });
  }

  changed(onChanged: OnSettingsChanged): SettingsSubscription {
    this.#subscribers.add(onChanged);
    // Told in process after every commit: heard from the first change on.
    return Object.assign(() => void this.#subscribers.delete(onChanged), { ready: Promise.resolve() });
  }

  close(): Promise<void> {
    this.#subscribers.clear();
    logsOf.get(this.#store.db)?.delete(this);
    return Promise.resolve();
  }

  #get(key: string): string | null {
    return key.startsWith(HOOK_PREFIX)
      ? this.#hooks.get(key.slice(HOOK_PREFIX.length))
      : this.#store.getSetting(key);
  }

  #set(key: string, value: string | null): void {
    if (key.startsWith(HOOK_PREFIX)) {
      const name = key.slice(HOOK_PREFIX.length);
      if (value === null) this.#hooks.unset(name);
      else this.#hooks.set(name, value);
    } else if (value === null) this.#store.deleteSetting(key);
    else this.#store.setSetting(key, value);
  }
}

function call(fn: OnSettingsChanged, keys: string[]): void {
  try {
    fn(keys);
  } catch {
    // A subscriber's own failure is its business.
  }
}
