/**
 * What inbound hooks keep in SQLite: delivery keys already handled (so a retried GitLab event is ignored even
 * after a restart), the GitLab hook secret set through the API, and prompts waiting for a session a hook
 * spawned (so a restart between the 202 and the session coming online neither loses nor repeats one). Only
 * `lib/hooks/` calls this.
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS hook_deliveries(key TEXT PRIMARY KEY, source TEXT NOT NULL, at INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS hook_deliveries_by_age ON hook_deliveries(at);
CREATE TABLE IF NOT EXISTS hook_settings(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS hook_spawned(key TEXT PRIMARY KEY, session_id TEXT NOT NULL, at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS hook_prompts(
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  message TEXT NOT NULL,
  deliver_as TEXT NOT NULL,
  actor TEXT NOT NULL,
  detail TEXT NOT NULL,
  spawn TEXT,
  created_at INTEGER NOT NULL
);
`;
/** Columns added after the first release, with their definitions (added to older files at open). */
const ADDED_PROMPT_COLUMNS: Record<string, string> = { sent_after: "INTEGER", wait_idle: "INTEGER" };

/** What a spawn needs to be run (again, after a restart). */
export interface PendingSpawn {
  repo: string;
  branch: string | null;
  ask: string[] | "all";
}

/**
 * A prompt for a spawned session, kept until it is handed to the session's live link. `spawn` is set until
 * the spawner reported the worker started: a row that still has it after a restart must be spawned again.
 */
export interface PendingPrompt {
  id: string;
  sessionId: string;
  message: string;
  deliverAs: "steer" | "followUp";
  actor: string;
  detail: Record<string, unknown>;
  spawn: PendingSpawn | null;
  createdAt: number;
  /**
   * The session's last stored seq before the prompt was first sent, or null while it was never sent (or was
   * kept by a daemon that did not record it): its answer, if any, is stored above it.
   */
  sentAfter: number | null;
  /** Sent only while the session is idle (no run active): a follow-up that must not land mid-run. */
  waitIdle?: boolean;
}

interface PromptRow {
  id: string;
  session_id: string;
  message: string;
  deliver_as: string;
  actor: string;
  detail: string;
  spawn: string | null;
  created_at: number;
  sent_after: number | null;
  wait_idle: number | null;
}

/** Keys are kept this long; GitLab retries within hours, not weeks. */
export const DEDUPE_KEEP_MS = 7 * 24 * 3600_000;

/** SQL for inbound hooks. */
export class HookStore {
  #claim: StatementSync;
  #prune: StatementSync;
  #get: StatementSync;
  #set: StatementSync;
  #unset: StatementSync;
  #spawnedFor: StatementSync;
  #recordSpawned: StatementSync;
  #pruneSpawned: StatementSync;
  #addPrompt: StatementSync;
  #spawned: StatementSync;
  #take: StatementSync;
  #prompts: StatementSync;
  #sent: StatementSync;
  #db: DatabaseSync;

  constructor(db: DatabaseSync) {
    this.#db = db;
    db.exec(SCHEMA);
    const have = new Set(
      (db.prepare("PRAGMA table_info(hook_prompts)").all() as { name: string }[]).map((c) => c.name),
    );
    for (const [name, type] of Object.entries(ADDED_PROMPT_COLUMNS)) {
      if (!have.has(name)) db.exec(`ALTER TABLE hook_prompts ADD COLUMN ${name} ${type}`);
    }
    this.#claim = db.prepare("INSERT OR IGNORE INTO hook_deliveries(key, source, at) VALUES (?, ?, ?)");
    this.#prune = db.prepare("DELETE FROM hook_deliveries WHERE at < ?");
    this.#get = db.prepare("SELECT value FROM hook_settings WHERE key = ?");
    this.#set = db.prepare(
      "INSERT INTO hook_settings(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
    );
    this.#unset = db.prepare("DELETE FROM hook_settings WHERE key = ?");
    this.#spawnedFor = db.prepare("SELECT session_id FROM hook_spawned WHERE key = ?");
    this.#recordSpawned = db.prepare("INSERT INTO hook_spawned(key, session_id, at) VALUES (?, ?, ?)");
    this.#pruneSpawned = db.prepare("DELETE FROM hook_spawned WHERE at < ?");
    this.#addPrompt = db.prepare(
      `INSERT OR REPLACE INTO
         hook_prompts(id, session_id, message, deliver_as, actor, detail, spawn, created_at, sent_after, wait_idle)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.#spawned = db.prepare("UPDATE hook_prompts SET spawn = NULL WHERE id = ?");
    this.#take = db.prepare("DELETE FROM hook_prompts WHERE id = ?");
    this.#prompts = db.prepare("SELECT * FROM hook_prompts ORDER BY created_at, id");
    this.#sent = db.prepare("UPDATE hook_prompts SET sent_after = ? WHERE id = ? AND sent_after IS NULL");
  }

  /** Remove a hook setting. */
  unset(key: string): void {
    this.#unset.run(key);
  }

  /**
   * Claim a delivery key and keep a spawn's prompt in one transaction, so a kill leaves both or neither.
   * @returns the session id of the spawn this key asked for, and whether it was asked for before (then
   * nothing is written, and the id is the earlier spawn's).
   */
  claimSpawn(source: string, key: string, p: PendingPrompt): { sessionId: string; duplicate: boolean } {
    const full = `${source}:${key}`;
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      this.#pruneSpawned.run(p.createdAt - DEDUPE_KEEP_MS);
      let result: { sessionId: string; duplicate: boolean };
      if (this.claim(source, key, p.createdAt)) {
        this.addPrompt(p);
        this.#recordSpawned.run(full, p.sessionId, p.createdAt);
        result = { sessionId: p.sessionId, duplicate: false };
      } else {
        const earlier = this.#spawnedFor.get(full) as { session_id: string } | undefined;
        result = { sessionId: earlier?.session_id ?? "", duplicate: true };
      }
      this.#db.exec("COMMIT");
      return result;
    } catch (error) {
      if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
      throw error;
    }
  }

  /** Keep a prompt until it is delivered (or given up). */
  addPrompt(p: PendingPrompt): void {
    this.#addPrompt.run(
      p.id,
      p.sessionId,
      p.message,
      p.deliverAs,
      p.actor,
      JSON.stringify(p.detail),
      p.spawn ? JSON.stringify(p.spawn) : null,
      p.createdAt,
      p.sentAfter,
      p.waitIdle ? 1 : null,
    );
  }

  /** The prompt's worker is started: a restart now waits for the session instead of spawning again. */
  markSpawned(id: string): void {
    this.#spawned.run(id);
  }

  /** The prompt is about to be sent for the first time, after the session's event `seq`. */
  markSent(id: string, seq: number): void {
    this.#sent.run(seq, id);
  }

  /** Remove a prompt; true when this call removed it (so exactly one caller sends it). */
  takePrompt(id: string): boolean {
    return this.#take.run(id).changes > 0;
  }

  /** Every prompt still waiting, oldest first. */
  prompts(): PendingPrompt[] {
    return (this.#prompts.all() as unknown as PromptRow[]).map((r) => ({
      id: r.id,
      sessionId: r.session_id,
      message: r.message,
      deliverAs: r.deliver_as === "followUp" ? "followUp" : "steer",
      actor: r.actor,
      detail: JSON.parse(r.detail),
      spawn: r.spawn ? JSON.parse(r.spawn) : null,
      createdAt: r.created_at,
      sentAfter: r.sent_after,
      ...(r.wait_idle ? { waitIdle: true } : {}),
    }));
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
