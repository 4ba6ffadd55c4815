/**
 * The daemon's settings (the GitLab connection, the GitLab hook secret set through the API) over the async
 * `SettingsLog`, with a synchronous read cache: a settings read sits on hot paths (every GitLab hook checks its
 * secret, the spawner asks for the clone credential) and callers read it synchronously. A write goes to the log
 * and then into this replica's cache; another replica's write reaches the cache through the log's change hints
 * (and its sweep for lost hints), so a change on one replica is read on the others within about a second.
 *
 * A daemon alone on its SQLite file fills the cache synchronously at construction (nothing else writes those
 * tables, and a daemon built in-process serves before its `ready`); a replica fills it in `start()`.
 */
import type { Store } from "./store.ts";
import { HookStore } from "./hooks/hook_store.ts";
import {
  GITLAB_BASE_URL,
  GITLAB_TOKEN,
  GITLAB_USERNAME,
  HOOK_GITLAB_SECRET,
  HOOK_PREFIX,
  type SettingEntry,
  type SettingsLog,
  type SettingsSubscription,
} from "./storage/settings_log.ts";
import { SqliteSettingsLog } from "./storage/sqlite_settings_log.ts";

export { GITLAB_BASE_URL, GITLAB_TOKEN, GITLAB_USERNAME, HOOK_GITLAB_SECRET };

/** The keys the daemon reads; each is cached from the start. */
export const SETTING_KEYS: readonly string[] = [
  GITLAB_TOKEN,
  GITLAB_USERNAME,
  GITLAB_BASE_URL,
  HOOK_GITLAB_SECRET,
];

/** How long a failed read of changed keys waits before it is tried again. */
const RETRY_MS = 1000;

/** What settings' callers need: a synchronous read and an all-or-nothing write. */
export interface SettingsAccess {
  /** The value this replica knows, or null when unset. */
  get(key: string): string | null;
  /** Set (a string) or remove (null) keys together; read back here at once, elsewhere within about a second. */
  put(changes: Record<string, string | null>): Promise<void>;
}

/** The settings of a deployment, read from this replica's cache. */
export class Settings implements SettingsAccess {
  #log: SettingsLog;
  #values = new Map<string, string | null>();
  #subscription: SettingsSubscription | null = null;
  /** Reloads run one after another, so an older read never lands after a newer one. */
  #reloads: Promise<void> = Promise.resolve();
  #retry: ReturnType<typeof setTimeout> | undefined;
  #closed = false;

  /** @param initial the values as they are now, read synchronously (a SQLite file), or null to load in `start` */
  constructor(log: SettingsLog, initial: Record<string, string | null> | null = null) {
    this.#log = log;
    for (const [key, value] of Object.entries(initial ?? {})) this.#values.set(key, value);
    if (initial) this.#subscribe();
  }

  /** Settings on the daemon's SQLite file, read now. */
  static sqlite(store: Store): Settings {
    const hooks = new HookStore(store.db);
    const read = (key: string) =>
      key.startsWith(HOOK_PREFIX) ? hooks.get(key.slice(HOOK_PREFIX.length)) : store.getSetting(key);
    return new Settings(
      new SqliteSettingsLog(store),
      Object.fromEntries(SETTING_KEYS.map((k) => [k, read(k)])),
    );
  }

  /** Listen for other replicas' changes, then load every key (changes committed meanwhile are heard). */
  async start(): Promise<void> {
    if (this.#closed) return;
    const subscription = this.#subscribe();
    await subscription.ready;
    await this.#reload(SETTING_KEYS);
  }

  get(key: string): string | null {
    return this.#values.get(key) ?? null;
  }

  async put(changes: Record<string, string | null>): Promise<void> {
    await this.#log.put(changes);
    for (const [key, value] of Object.entries(changes)) this.#values.set(key, value);
  }

  /** Every setting, secrets without their values. */
  list(): Promise<SettingEntry[]> {
    return this.#log.list();
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#retry);
    this.#subscription?.();
    await this.#reloads;
    await this.#log.close();
  }

  #subscribe(): SettingsSubscription {
    this.#subscription ??= this.#log.changed((keys) => void this.#reload(keys));
    return this.#subscription;
  }

  #reload(keys: readonly string[]): Promise<void> {
    const run = async () => {
      if (this.#closed) return;
      try {
        const values = await this.#log.getMany(keys);
        if (this.#closed) return;
        for (const key of keys) this.#values.set(key, values[key] ?? null);
      } catch (error) {
        // The database is away: the values stay as they were until a later read gets through (the log has
        // already counted this change as heard, so it will not announce it again).
        console.error(`lvmh: could not read settings: ${(error as Error).message}`);
        if (!this.#closed) {
          clearTimeout(this.#retry);
          this.#retry = setTimeout(() => void this.#reload(SETTING_KEYS.concat(keys)), RETRY_MS);
          Deno.unrefTimer(this.#retry);
        }
      }
    };
    return this.#reloads = this.#reloads.then(run);
  }
}
