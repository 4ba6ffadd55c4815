/**
 * Named tokens in the daemon's SQLite file, over lib/token_store.ts (the one schema of the `tokens` table,
 * which `deno task token` writes too). One daemon owns the file, so a revocation is told in process, after its
 * commit, to every token log on the same handle; the sweep finds what another process (the token command)
 * revoked. Revocation times are this machine's clock, which the command shares.
 */
import type { DatabaseSync } from "node:sqlite";
import { TokenStore } from "../token_store.ts";
import {
  type OnRevoked,
  REVOKED_SLACK_MS,
  REVOKED_SWEEP_MS,
  RevokedWatch,
  type RevokedWindow,
  type Role,
  type TokenInfo,
  type TokenLog,
  type TokenOwner,
} from "./token_log.ts";
import { settle } from "./sqlite_sync.ts";

/** Every token log on a handle, for the in-process hint. */
const logsOf = new WeakMap<DatabaseSync, Set<SqliteTokenLog>>();

/** The token log on a SQLite handle shared with the daemon's `Store` (which stays its owner). */
export class SqliteTokenLog implements TokenLog {
  readonly kind = "sqlite";
  #db: DatabaseSync;
  #store: TokenStore;
  #watches = new Set<RevokedWatch>();
  #sweepMs: number;

  constructor(db: DatabaseSync, options: { sweepMs?: number } = {}) {
    this.#db = db;
    this.#store = new TokenStore(db);
    this.#sweepMs = options.sweepMs ?? REVOKED_SWEEP_MS;
    let logs = logsOf.get(db);
    if (!logs) logsOf.set(db, logs = new Set());
    logs.add(this);
  }

  insert(name: string, role: Role, hash: string): Promise<boolean> {
    return settle(() => this.#store.insert(name, role, hash));
  }

  find(hash: string): Promise<TokenOwner | null> {
    return settle(() => this.#store.find(hash));
  }

  touch(name: string, at: number): Promise<void> {
    try {
      this.#store.touch(name, at);
    } catch {
      // Best effort, as promised: the store's own gate already skips a refused write.
    }
    return Promise.resolve();
  }

  list(): Promise<TokenInfo[]> {
    return settle(() => plain(this.#store.list()));
  }

  revoke(name: string): Promise<boolean> {
    return settle(() => {
      if (!this.#store.revoke(name)) return false;
      // Committed (autocommit): tell this daemon's subscribers once the caller has its answer.
      const at = Date.now();
      for (const log of logsOf.get(this.#db) ?? []) {
        for (const watch of log.#watches) queueMicrotask(() => watch.heard(name, at));
      }
      return true;
    });
  }

  revokedSince(since: number): Promise<{ name: string; revokedAt: number }[]> {
    return settle(() => plain(this.#store.revokedSince(since)));
  }

  revoked(onRevoked: OnRevoked): () => void {
    const read = (since: number | null): Promise<RevokedWindow> =>
      settle(() => {
        const now = Date.now();
        return { rows: plain(this.#store.revokedSince(since ?? now - REVOKED_SLACK_MS)), now };
      });
    const watch = new RevokedWatch(read, onRevoked, this.#sweepMs);
    this.#watches.add(watch);
    return () => {
      watch.stop();
      this.#watches.delete(watch);
    };
  }

  close(): Promise<void> {
    for (const watch of this.#watches) watch.stop();
    this.#watches.clear();
    logsOf.get(this.#db)?.delete(this);
    return Promise.resolve();
  }
}

/** node:sqlite rows have no prototype: copied into plain objects, as the PostgreSQL log returns them. */
function plain<T extends object>(rows: T[]): T[] {
  return rows.map((row) => ({ ...row }));
}
