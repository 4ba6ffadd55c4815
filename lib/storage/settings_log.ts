/**
 * The daemon's settings behind an async interface, so several replicas on one database share them: the GitLab
 * connection (its token, the user it belongs to, the GitLab it was validated against) and the GitLab hook
 * secret set through the API. Two implementations pass one contract (tests/process/settings_images_mr_contract_test.ts):
 * SQLite over the tables the daemon has today (`settings` through lib/store.ts, `hook_settings` through
 * lib/hooks/hook_store.ts, so SQLite keeps one schema), and PostgreSQL (one `settings` table).
 *
 * Keys: a key under `HOOK_PREFIX` is the hooks' (on SQLite, `hook_settings` under the rest of the name); any
 * other is the store's. Values are secrets unless their key is in `PUBLIC_SETTINGS`: a listing shows that a
 * secret is set, never its value, so an unknown key added later is hidden until someone says otherwise.
 *
 * Changes across replicas: `changed(onChanged)` hears the keys changed on any replica. The hint carries no
 * value (a NOTIFY payload is readable by anyone on the database, and lands in its logs) and is only a
 * wake-up: each subscription compares every key's version with its previous look, at once on a hint and every
 * `SETTINGS_SWEEP_MS` for hints that were lost.
 */
import { Looks } from "./looks.ts";

/** Where the hooks' settings live; on SQLite that is `hook_settings`, keyed by the rest of the name. */
export const HOOK_PREFIX = "hook.";

/** The daemon's keys, as lib/gitlab.ts and lib/hooks/gitlab_secret.ts name them. */
export const GITLAB_TOKEN = "gitlab.token";
export const GITLAB_USERNAME = "gitlab.username";
export const GITLAB_BASE_URL = "gitlab.baseUrl";
export const HOOK_GITLAB_SECRET = `${HOOK_PREFIX}gitlab.secret`;

/** The only keys whose values a listing shows; every other value is treated as a secret. */
export const PUBLIC_SETTINGS: ReadonlySet<string> = new Set([GITLAB_USERNAME, GITLAB_BASE_URL]);

/** How often a subscription looks for changes a lost hint did not announce. */
export const SETTINGS_SWEEP_MS = 500;

/** One setting as a listing shows it. */
export interface SettingEntry {
  key: string;
  /** True when the value is a secret: it is then never shown. */
  secret: boolean;
  /** The value of a public setting; null for a secret. */
  value: string | null;
}

/** Called with the keys that changed (set, replaced or removed), possibly late by a sweep period. */
export type OnSettingsChanged = (keys: string[]) => void;

/** Stops a subscription; `ready` resolves once every change committed afterwards will be heard. */
export type SettingsSubscription = (() => void) & { ready: Promise<void> };

/** Every setting of a deployment. */
export interface SettingsLog {
  /** Which database holds them. */
  readonly kind: "sqlite" | "postgres";
  /** One value, or null when unset. */
  get(key: string): Promise<string | null>;
  /** Several values read together (a token and the GitLab it belongs to must come from one state). */
  getMany(keys: readonly string[]): Promise<Record<string, string | null>>;
  /**
   * Set (a string) or remove (null) several keys in one transaction: another replica sees all or none.
   * Subscribers everywhere then hear of the keys.
   */
  put(changes: Record<string, string | null>): Promise<void>;
  /** Every setting, by key; secrets without their values. */
  list(): Promise<SettingEntry[]>;
  /**
   * Hear of keys changed from now on, on any replica. A change committed before the subscription's `ready`
   * may be missed (it was already there when the subscription first looked): read values after `ready`.
   * @returns a function that stops this subscription, with its `ready`.
   */
  changed(onChanged: OnSettingsChanged): SettingsSubscription;
  /** Stop the sweeps and the listener and release connections; unusable afterwards. */
  close(): Promise<void>;
}

/** A listing's entry for a key and its value: the value only when the key is public. */
export function entryOf(key: string, value: string): SettingEntry {
  const secret = !PUBLIC_SETTINGS.has(key);
  return { key, secret, value: secret ? null : value };
}

/**
 * One subscription's comparison: `read` gives each key's version (anything that changes with every write),
 * and each look calls back the keys whose version differs from the previous look's, removed keys included.
 * The first look only takes the state. A `look()` while one runs makes one more run after it, so a hint is
 * never swallowed by a look that read before the change committed.
 */
export class SettingsWatch {
  #read: () => Promise<Map<string, string>>;
  #onChanged: OnSettingsChanged;
  #seen: Map<string, string> | null = null;
  #looks: Looks;
  /** Resolves once the first look took the state (or failed, when the sweeps take it later). */
  readonly ready: Promise<void>;

  constructor(read: () => Promise<Map<string, string>>, onChanged: OnSettingsChanged, everyMs: number) {
    this.#read = read;
    this.#onChanged = onChanged;
    this.#looks = new Looks(() => this.#compare(), everyMs > 0 ? everyMs : null);
    this.ready = this.look();
  }

  /** Compare now (a hint, a re-LISTEN, this replica's own write). */
  look(): Promise<void> {
    return this.#looks.look();
  }

  stop(): void {
    this.#looks.stop();
  }

  async #compare(): Promise<boolean> {
    let now: Map<string, string>;
    try {
      now = await this.#read();
    } catch {
      // The store is away or closing: the next look compares with the same state.
      return false;
    }
    if (this.#looks.stopped) return false;
    const before = this.#seen;
    this.#seen = now;
    if (!before) return true;
    const keys = [...now].filter(([key, version]) => before.get(key) !== version).map(([key]) => key);
    for (const key of before.keys()) if (!now.has(key)) keys.push(key);
    if (!keys.length) return true;
    try {
      this.#onChanged(keys.sort());
    } catch {
      // A subscriber's own failure is its business.
    }
    return true;
  }
}
