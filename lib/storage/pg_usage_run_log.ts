/**
 * Usage runs in PostgreSQL, for several replicas on one database: lib/usage_runs.ts's columns in `usage_runs`
 * (migration 8). A write is one multi-row upsert whose WHERE keeps a row counted further: under READ
 * COMMITTED a second writer waits for the first's row lock and then compares with what the first left.
 */
import type postgres from "postgres";
import { type ConnectOptions, PgStore } from "./pg_client.ts";
import { openMigrated } from "./pg_migrate.ts";
import { safeInteger } from "./event_log.ts";
import type { RunRow, UsageRunLog } from "./usage_run_log.ts";

/** The usage run log over a PostgreSQL pool whose database is migrated. */
export class PgUsageRunLog extends PgStore implements UsageRunLog {
  /**
   * Connect to `url` and migrate its schema (lib/storage/pg_migrate.ts).
   * @throws {Error} when the database cannot be reached or migrated; the pool is then closed.
   */
  static async open(url: string, options: ConnectOptions = {}): Promise<PgUsageRunLog> {
    const sql = await openMigrated(url, options);
    return new PgUsageRunLog(sql, { ownsPool: true });
  }

  async seen(): Promise<Map<string, number>> {
    const rows = await this.sql`SELECT session_id, max(seen_seq) AS seq FROM usage_runs GROUP BY session_id`;
    return new Map(rows.map((r) => [r.session_id as string, safeInteger(r.seq)]));
  }

  async seenOf(sessionId: string): Promise<number | null> {
    const [r] = await this.sql`SELECT max(seen_seq) AS seq FROM usage_runs WHERE session_id = ${sessionId}`;
    return r.seq === null ? null : safeInteger(r.seq);
  }

  async openRun(sessionId: string): Promise<RunRow | null> {
    const [r] = await this.sql`SELECT * FROM usage_runs WHERE session_id = ${sessionId} AND open = 1
      ORDER BY start_seq DESC LIMIT 1`;
    return r ? runOf(r) : null;
  }

  async put(rows: readonly RunRow[], seen: ReadonlyMap<string, number>): Promise<number> {
    // One row per key (an upsert may not touch a row twice), the last given standing, as writes in order would.
    const byKey = new Map<string, Record<string, unknown>>();
    for (const c of rows) {
      byKey.set(`${c.sessionId}\n${c.startSeq}`, {
        session_id: c.sessionId,
        start_seq: c.startSeq,
        started_at: c.startedAt,
        person: c.person,
        model: c.model,
        input_tokens: c.inputTokens,
        output_tokens: c.outputTokens,
        cost: c.cost,
        counted: c.counted,
        open: c.open,
        seen_seq: seen.get(c.sessionId) ?? 0,
      });
    }
    if (!byKey.size) return 0;
    const written = await this.sql`INSERT INTO usage_runs ${this.sql([...byKey.values()])}
      ON CONFLICT(session_id, start_seq) DO UPDATE SET started_at = excluded.started_at,
        person = excluded.person, model = excluded.model, input_tokens = excluded.input_tokens,
        output_tokens = excluded.output_tokens, cost = excluded.cost, counted = excluded.counted,
        open = excluded.open, seen_seq = excluded.seen_seq
      WHERE usage_runs.seen_seq <= excluded.seen_seq
      RETURNING 1`;
    return written.length;
  }

  async range(from: number, to: number): Promise<RunRow[]> {
    return (await this.sql`SELECT * FROM usage_runs WHERE started_at >= ${from} AND started_at < ${to}`)
      .map(runOf);
  }

  async deleteSession(sessionId: string): Promise<void> {
    await this.sql`DELETE FROM usage_runs WHERE session_id = ${sessionId}`;
  }
}

/** A row as lib/usage_count.ts names its fields. */
function runOf(r: postgres.Row): RunRow {
  return {
    sessionId: r.session_id,
    startSeq: safeInteger(r.start_seq),
    startedAt: safeInteger(r.started_at),
    person: r.person,
    model: r.model,
    inputTokens: Number(r.input_tokens),
    outputTokens: Number(r.output_tokens),
    cost: Number(r.cost),
    counted: r.counted,
    open: r.open,
  };
}
