/**
 * Kept hook prompts in PostgreSQL, for several replicas on one database. A claim is one statement: the oldest
 * free prompt is picked `FOR UPDATE SKIP LOCKED` and its lease written, so of replicas claiming at once each
 * prompt goes to one (a second claimer skips the row the first has locked, or, once the first committed,
 * finds its lease live on the re-check READ COMMITTED makes of a locked row). Lease times are the database's
 * clock, so replicas whose clocks disagree still agree on when a lease ran out. Every write of a claimant is
 * conditional on its lease token, which a new claim replaces: a replica whose lease was taken over changes
 * nothing.
 */
import type postgres from "postgres";
import { type ConnectOptions, PgStore, type Sql } from "./pg_client.ts";
import { openMigrated } from "./pg_migrate.ts";
import {
  type ClaimedPrompt,
  type ClaimFilter,
  DEDUPE_KEEP_MS,
  type HookPromptLog,
  type PendingPrompt,
  PROMPT_LEASE_MS,
  type PromptLease,
} from "./hook_prompt_log.ts";

/** The database's clock in ms: the same for every replica. */
const NOW_MS = "(extract(epoch FROM statement_timestamp()) * 1000)::bigint";

const COLUMNS =
  "id, session_id, message, deliver_as, actor, detail, spawn, created_at, sent_after, wait_idle";

/** The hook prompt log over a PostgreSQL pool whose database is migrated. */
export class PgHookPromptLog extends PgStore implements HookPromptLog {
  /**
   * Connect to `url` and migrate its schema (lib/storage/pg_migrate.ts).
   * @throws {Error} when the database cannot be reached or migrated; the pool is then closed.
   */
  static async open(url: string, options: ConnectOptions = {}): Promise<PgHookPromptLog> {
    const sql = await openMigrated(url, options);
    return new PgHookPromptLog(sql, { ownsPool: true });
  }

  async claimDelivery(source: string, key: string, now = Date.now()): Promise<boolean> {
    return await claimKey(this.sql, source, key, now);
  }

  async keepSpawn(
    source: string,
    key: string,
    p: PendingPrompt,
  ): Promise<{ sessionId: string; duplicate: boolean }> {
    const full = `${source}:${key}`;
    return await this.sql.begin(async (tx) => {
      await tx`DELETE FROM hook_spawned WHERE at < ${p.createdAt - DEDUPE_KEEP_MS}`;
      // A replica claiming the same key at once waits here on the unique key until this commits, then finds
      // it taken and reads the spawn this transaction recorded.
      if (await claimKey(tx, source, key, p.createdAt)) {
        await upsert(tx, p);
        await tx`INSERT INTO hook_spawned(key, session_id, at) VALUES (${full}, ${p.sessionId}, ${p.createdAt})`;
        return { sessionId: p.sessionId, duplicate: false };
      }
      const [earlier] = await tx`SELECT session_id FROM hook_spawned WHERE key = ${full}`;
      return { sessionId: (earlier?.session_id as string | undefined) ?? "", duplicate: true };
    });
  }

  async keep(p: PendingPrompt): Promise<void> {
    await upsert(this.sql, p);
  }

  /**
   * `keep` as a caller's transaction writes it (a merge request record's save, whose pipeline mark says the
   * follow-up was made): both commit, or neither.
   */
  keepWrites(p: PendingPrompt): (tx: postgres.TransactionSql) => Promise<void> {
    return (tx) => upsert(tx, p);
  }

  async prompts(): Promise<PendingPrompt[]> {
    const rows = await this.sql.unsafe(
      `SELECT ${COLUMNS} FROM hook_prompts ORDER BY created_at, id COLLATE "C"`,
    );
    return rows.map(prompt);
  }

  async claim(
    owner: string,
    leaseMs = PROMPT_LEASE_MS,
    filter: ClaimFilter = {},
  ): Promise<ClaimedPrompt | null> {
    const token = crypto.randomUUID();
    const [row] = await this.sql.unsafe(
      `UPDATE hook_prompts SET lease_owner = $1, lease_token = $2, lease_until = ${NOW_MS} + $3
        WHERE id = (
          SELECT id FROM hook_prompts
           WHERE (lease_until IS NULL OR lease_until <= ${NOW_MS})
             AND ($4::text IS NULL OR id = $4) AND ($5::text IS NULL OR session_id = $5)
           ORDER BY created_at, id COLLATE "C" LIMIT 1
           FOR UPDATE SKIP LOCKED)
        RETURNING ${COLUMNS}`,
      [owner, token, leaseMs, filter.id ?? null, filter.sessionId ?? null],
    );
    return row ? { prompt: prompt(row), lease: { id: row.id as string, owner, token } } : null;
  }

  async renew(lease: PromptLease, leaseMs = PROMPT_LEASE_MS): Promise<boolean> {
    return await this.#holding(lease, `lease_until = ${NOW_MS} + $3`, [leaseMs]);
  }

  async release(lease: PromptLease): Promise<boolean> {
    return await this.#holding(lease, "lease_owner = NULL, lease_token = NULL, lease_until = NULL");
  }

  async markSpawned(lease: PromptLease): Promise<boolean> {
    return await this.#holding(lease, "spawn = NULL");
  }

  async markSent(lease: PromptLease, seq: number): Promise<boolean> {
    // The first send's seq stays: an answer is looked for above it whatever later sends found.
    return await this.#holding(lease, "sent_after = coalesce(sent_after, $3)", [seq]);
  }

  async answered(lease: PromptLease): Promise<boolean> {
    const gone = await this
      .sql`DELETE FROM hook_prompts WHERE id = ${lease.id} AND lease_token = ${lease.token}`;
    return gone.count > 0;
  }

  failed(lease: PromptLease): Promise<boolean> {
    return this.answered(lease);
  }

  async take(id: string): Promise<boolean> {
    return (await this.sql`DELETE FROM hook_prompts WHERE id = ${id}`).count > 0;
  }

  /** One UPDATE of the prompt's row while `lease` is its current one. */
  async #holding(lease: PromptLease, set: string, more: (string | number)[] = []): Promise<boolean> {
    const rows = await this.sql.unsafe(
      `UPDATE hook_prompts SET ${set} WHERE id = $1 AND lease_token = $2`,
      [lease.id, lease.token, ...more],
    );
    return rows.count > 0;
  }
}

/** Prune old delivery keys and record this one; false when it was recorded before. */
async function claimKey(sql: Sql | postgres.TransactionSql, source: string, key: string, now: number) {
  await sql`DELETE FROM hook_deliveries WHERE at < ${now - DEDUPE_KEEP_MS}`;
  const rows =
    await sql`INSERT INTO hook_deliveries(key, source, at) VALUES (${`${source}:${key}`}, ${source}, ${now})
    ON CONFLICT (key) DO NOTHING RETURNING key`;
  return rows.length > 0;
}

/** Keep `p`, replacing a row with its id, lease and all (as SQLite's `INSERT OR REPLACE` does). */
async function upsert(sql: Sql | postgres.TransactionSql, p: PendingPrompt): Promise<void> {
  await sql`INSERT INTO hook_prompts(id, session_id, message, deliver_as, actor, detail, spawn, created_at,
      sent_after, wait_idle)
    VALUES (${p.id}, ${p.sessionId}, ${p.message}, ${p.deliverAs}, ${p.actor}, ${JSON.stringify(p.detail)},
      ${p.spawn ? JSON.stringify(p.spawn) : null}, ${p.createdAt}, ${p.sentAfter}, ${p.waitIdle === true})
    ON CONFLICT (id) DO UPDATE SET session_id = excluded.session_id, message = excluded.message,
      deliver_as = excluded.deliver_as, actor = excluded.actor, detail = excluded.detail, spawn = excluded.spawn,
      created_at = excluded.created_at, sent_after = excluded.sent_after, wait_idle = excluded.wait_idle,
      lease_owner = NULL, lease_token = NULL, lease_until = NULL`;
}

/** A row as `HookStore.prompts()` returns it. */
function prompt(r: postgres.Row): PendingPrompt {
  return {
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
  };
}
