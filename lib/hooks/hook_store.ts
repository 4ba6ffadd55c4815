/**
 * What inbound hooks keep in SQLite: delivery keys already handled (so a retried GitLab event is ignored even
 * after a restart) and the GitLab hook secret set through the API. Only `lib/hooks/hooks.ts` calls this.
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS hook_deliveries(key TEXT PRIMARY KEY, source TEXT NOT NULL, at INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS hook_deliveries_by_age ON hook_deliveries(at);
CREATE TABLE IF NOT EXISTS hook_settings(key TEXT PRIMARY KEY, value TEXT NOT NULL);
`;

/** Keys are kept this long; GitLab retries within hours, not weeks. */
export const DEDUPE_KEEP_MS = 7 * 24 * 3600_000;

/** SQL for inbound hooks. */
export class HookStore {
  #claim: StatementSync;
  #prune: StatementSync;
  #get: StatementSync;
  #set: StatementSync;

  constructor(db: DatabaseSync) {
    db.exec(SCHEMA);
    this.#claim = db.prepare("INSERT OR IGNORE INTO hook_deliveries(key, source, at) VALUES (?, ?, ?)");
    this.#prune = db.prepare("DELETE FROM hook_deliveries WHERE at < ?");
    this.#get = db.prepare("SELECT value FROM hook_settings WHERE key = ?");
    this.#set = db.prepare(
      "INSERT INTO hook_settings(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
    );
  }

  /** Record a delivery key; false when it was recorded before (a replay). */
  claim(source: string, key: string, now = Date.now()): boolean {
    this.#prune.run(now - DEDUPE_KEEP_MS);
    return this.#claim.run(`${source}:${key}`, source, now).changes > 0;
  }

  /** A stored hook setting, or null. */
  get(key: string): string | null {
    return (this.#get.get(key) as { value: string } | undefined)?.value ?? null;
  }

  /** Store a hook setting. */
  set(key: string, value: string): void {
    this.#set.run(key, value);
  }
}
