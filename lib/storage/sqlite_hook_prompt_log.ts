/**
 * Kept hook prompts in the daemon's SQLite file, through lib/hooks/hook_store.ts itself (its tables and
 * statements stay there, so the file keeps one schema whichever interface the daemon uses). Leases live in a
 * table of their own beside it, `hook_prompt_leases`, so the prompts table stays exactly what `HookStore`
 * reads and writes, and a daemon that knows nothing of leases still finds every prompt.
 *
 * One daemon owns the file, but the contract is the replicas' one: a claim, and every write that names a
 * lease, is one `BEGIN IMMEDIATE` transaction, so even another process on the file (a second daemon by
 * mistake, a copy tool) cannot take a prompt between the check and the write.
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import { HookStore } from "../hooks/hook_store.ts";
import {
  type ClaimedPrompt,
  type ClaimFilter,
  type HookPromptLog,
  type PendingPrompt,
  PROMPT_LEASE_MS,
  type PromptLease,
} from "./hook_prompt_log.ts";
import { settle, writeTransaction } from "./sqlite_sync.ts";

const LEASES = `
CREATE TABLE IF NOT EXISTS hook_prompt_leases(
  id TEXT PRIMARY KEY, owner TEXT NOT NULL, token TEXT NOT NULL, until INTEGER NOT NULL);`;

/** The hook prompt log on a SQLite handle shared with the daemon's `Store` (which stays its owner). */
export class SqliteHookPromptLog implements HookPromptLog {
  readonly kind = "sqlite";
  #db: DatabaseSync;
  #store: HookStore;
  #s: Record<"free" | "hold" | "held" | "renew" | "unlease" | "orphans", StatementSync>;

  /** @param db the store's handle (`store.db`). */
  constructor(db: DatabaseSync) {
    this.#db = db;
    this.#store = new HookStore(db);
    db.exec(LEASES);
    this.#s = {
      // Oldest first, as `HookStore.prompts()` orders them; a lease that ran out frees its prompt.
      free: db.prepare(
        `SELECT p.id FROM hook_prompts p LEFT JOIN hook_prompt_leases l ON l.id = p.id
          WHERE (l.id IS NULL OR l.until <= ?) AND (? IS NULL OR p.id = ?) AND (? IS NULL OR p.session_id = ?)
          ORDER BY p.created_at, p.id LIMIT 1`,
      ),
      hold: db.prepare(
        "INSERT OR REPLACE INTO hook_prompt_leases(id, owner, token, until) VALUES (?, ?, ?, ?)",
      ),
      held: db.prepare("SELECT 1 AS yes FROM hook_prompt_leases WHERE id = ? AND token = ?"),
      renew: db.prepare("UPDATE hook_prompt_leases SET until = ? WHERE id = ? AND token = ?"),
      unlease: db.prepare("DELETE FROM hook_prompt_leases WHERE id = ?"),
      // A prompt dropped by a writer that knows nothing of leases leaves its lease behind.
      orphans: db.prepare("DELETE FROM hook_prompt_leases WHERE id NOT IN (SELECT id FROM hook_prompts)"),
    };
  }

  claimDelivery(source: string, key: string, now?: number): Promise<boolean> {
    return settle(() => this.#store.claim(source, key, now));
  }

  keepSpawn(
    source: string,
    key: string,
    p: PendingPrompt,
  ): Promise<{ sessionId: string; duplicate: boolean }> {
    return settle(() => this.#store.claimSpawn(source, key, p));
  }

  keep(p: PendingPrompt): Promise<void> {
    return settle(() =>
      writeTransaction(this.#db, () => {
        // A prompt kept again (sent to an old plugin and the send threw) is free for anyone to claim.
        this.#s.unlease.run(p.id);
        this.#store.addPrompt(p);
      })
    );
  }

  prompts(): Promise<PendingPrompt[]> {
    return settle(() => this.#store.prompts());
  }

  claim(owner: string, leaseMs = PROMPT_LEASE_MS, filter: ClaimFilter = {}): Promise<ClaimedPrompt | null> {
    return settle(() =>
      writeTransaction(this.#db, () => {
        const now = Date.now();
        const { id = null, sessionId = null } = filter;
        const free = this.#s.free.get(now, id, id, sessionId, sessionId) as { id: string } | undefined;
        if (!free) return null;
        const prompt = this.#store.prompts().find((p) => p.id === free.id)!;
        const lease = { id: free.id, owner, token: crypto.randomUUID() };
        this.#s.hold.run(lease.id, owner, lease.token, now + leaseMs);
        return { prompt, lease };
      })
    );
  }

  renew(lease: PromptLease, leaseMs = PROMPT_LEASE_MS): Promise<boolean> {
    return settle(() => this.#s.renew.run(Date.now() + leaseMs, lease.id, lease.token).changes > 0);
  }

  release(lease: PromptLease): Promise<boolean> {
    return this.#holding(lease, () => void this.#s.unlease.run(lease.id));
  }

  markSpawned(lease: PromptLease): Promise<boolean> {
    return this.#holding(lease, () => this.#store.markSpawned(lease.id));
  }

  markSent(lease: PromptLease, seq: number): Promise<boolean> {
    return this.#holding(lease, () => this.#store.markSent(lease.id, seq));
  }

  answered(lease: PromptLease): Promise<boolean> {
    return this.#holding(lease, () => this.#drop(lease.id));
  }

  failed(lease: PromptLease): Promise<boolean> {
    return this.#holding(lease, () => this.#drop(lease.id));
  }

  take(id: string): Promise<boolean> {
    return settle(() => writeTransaction(this.#db, () => this.#drop(id)));
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  /** Run `write` only while `lease` is the prompt's current one, in one transaction. */
  #holding(lease: PromptLease, write: () => void): Promise<boolean> {
    return settle(() =>
      writeTransaction(this.#db, () => {
        if (!this.#s.held.get(lease.id, lease.token)) return false;
        write();
        return true;
      })
    );
  }

  #drop(id: string): boolean {
    this.#s.unlease.run(id);
    this.#s.orphans.run();
    return this.#store.takePrompt(id);
  }
}
