/**
 * Merge request records in PostgreSQL, for several replicas on one database: lib/merge_request_record.ts's
 * columns in `session_merge_requests`. Both compare-and-set writes are one conditional statement, so under
 * READ COMMITTED a second writer waits for the first's row lock and then re-checks its condition against the
 * row the first left: exactly one of two racing replicas moves the pushed sha, or saves over a given read.
 */
import type postgres from "postgres";
import { type ConnectOptions, PgStore } from "./pg_client.ts";
import { openMigrated } from "./pg_migrate.ts";
import { safeInteger } from "./event_log.ts";
import type { MergeRequestLog, Push, Row, Save } from "./merge_request_log.ts";

/** A save's own writes, run on its transaction. */
export type PgSaveWrites = (tx: postgres.TransactionSql) => Promise<unknown>;

/** The merge request log over a PostgreSQL pool whose database is migrated. */
export class PgMergeRequestLog extends PgStore implements MergeRequestLog<PgSaveWrites> {
  /**
   * Connect to `url` and migrate its schema (lib/storage/pg_migrate.ts).
   * @throws {Error} when the database cannot be reached or migrated; the pool is then closed.
   */
  static async open(url: string, options: ConnectOptions = {}): Promise<PgMergeRequestLog> {
    const sql = await openMigrated(url, options);
    return new PgMergeRequestLog(sql, { ownsPool: true });
  }

  async row(sessionId: string): Promise<Row | null> {
    const [row] = await this.sql`SELECT * FROM session_merge_requests WHERE session_id = ${sessionId}`;
    return row ? rowOf(row) : null;
  }

  async all(): Promise<Row[]> {
    return (await this.sql`SELECT * FROM session_merge_requests`).map(rowOf);
  }

  async updateIf(sessionId: string, expectedSha: string | null, push: Push, now: number): Promise<boolean> {
    // No record yet, or one never pushed to: the insert, or the update its conflict turns into, is
    // conditional on the row the statement finally sees (a concurrent insert's, once committed).
    const rows = expectedSha === null
      ? await this
        .sql`INSERT INTO session_merge_requests(session_id, repo, source_branch, pushed_sha, updated_at)
          VALUES (${sessionId}, ${push.repo}, ${push.sourceBranch}, ${push.sha}, ${now})
          ON CONFLICT(session_id) DO UPDATE SET pushed_sha = excluded.pushed_sha, updated_at = excluded.updated_at
          WHERE session_merge_requests.pushed_sha IS NULL RETURNING 1`
      : await this.sql`UPDATE session_merge_requests SET pushed_sha = ${push.sha}, updated_at = ${now}
          WHERE session_id = ${sessionId} AND pushed_sha = ${expectedSha} RETURNING 1`;
    return rows.length > 0;
  }

  async saveIf(sessionId: string, seen: Row, next: Save, also?: PgSaveWrites): Promise<boolean> {
    const f = next.fields;
    const m = next.marks;
    return await this.sql.begin(async (tx) => {
      const rows = await tx`UPDATE session_merge_requests SET iid = ${f.iid}, web_url = ${f.webUrl},
          state = ${f.state}, target_branch = ${f.targetBranch}, title = ${f.title},
          pipeline = ${f.pipeline ? JSON.stringify(f.pipeline) : null}, merge_status = ${f.mergeStatus},
          notes = ${f.notes}, updated_at = ${next.updatedAt}, refreshed_at = ${next.refreshedAt},
          pipeline_notified = ${m.notified}, pipeline_prompted = ${m.prompted}, pipeline_prompts = ${m.prompts}
        WHERE session_id = ${sessionId} AND refreshed_at = ${seen.refreshedAt}
          AND pipeline_notified IS NOT DISTINCT FROM ${seen.pipelineNotified}::bigint
          AND pipeline_prompted IS NOT DISTINCT FROM ${seen.pipelinePrompted}::bigint
          AND pipeline_prompts = ${seen.pipelinePrompts}
        RETURNING 1`;
      if (!rows.length) return false;
      await also?.(tx);
      return true;
    });
  }

  async delete(sessionId: string): Promise<void> {
    await this.sql`DELETE FROM session_merge_requests WHERE session_id = ${sessionId}`;
  }

  async due(before: number, limit: number): Promise<string[]> {
    const rows = await this.sql`SELECT session_id FROM session_merge_requests
      WHERE iid IS NOT NULL AND state = 'opened' AND refreshed_at <= ${before}
      ORDER BY refreshed_at, session_id COLLATE "C" LIMIT ${limit}`;
    return rows.map((r) => r.session_id as string);
  }

  async postpone(sessionId: string, now: number): Promise<void> {
    await this.sql`UPDATE session_merge_requests SET refreshed_at = ${now} WHERE session_id = ${sessionId}`;
  }

  async byBranch(repo: string, branch: string): Promise<string[]> {
    const rows = await this.sql`SELECT session_id FROM session_merge_requests
      WHERE repo = ${repo} AND source_branch = ${branch} AND iid IS NOT NULL`;
    return rows.map((r) => r.session_id as string);
  }
}

/** A row as lib/merge_request_record.ts names its columns. */
function rowOf(r: postgres.Row): Row {
  const num = (v: unknown) => v === null ? null : safeInteger(v);
  return {
    sessionId: r.session_id,
    repo: r.repo,
    sourceBranch: r.source_branch,
    pushedSha: r.pushed_sha,
    iid: num(r.iid),
    webUrl: r.web_url,
    state: r.state,
    targetBranch: r.target_branch,
    title: r.title,
    pipeline: r.pipeline,
    mergeStatus: r.merge_status,
    notes: safeInteger(r.notes),
    updatedAt: safeInteger(r.updated_at),
    refreshedAt: safeInteger(r.refreshed_at),
    pipelineNotified: num(r.pipeline_notified),
    pipelinePrompted: num(r.pipeline_prompted),
    pipelinePrompts: r.pipeline_prompts,
  };
}
