/**
 * Every replica's spawn jobs in one PostgreSQL table (`spawn_jobs`, migration 11), for each replica's job list
 * (lib/spawn/shared_jobs.ts). A job's row is written only by the replica that runs it, after every change; a
 * write older than the row is refused, so a late write never takes a job back. Other replicas read the rows
 * with whether their replica's heartbeat is fresh (`replicas.seen_at`, the database's clock).
 */
import type { SpawnJob, SpawnState } from "../protocol.ts";
import { type ConnectOptions, PgStore } from "./pg_client.ts";
import { openMigrated } from "./pg_migrate.ts";
import { safeInteger } from "./event_log.ts";

const NOW_MS = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint";

/** A job as another replica reads it. */
export interface SharedJobRow {
  job: SpawnJob;
  /** The replica that runs it. */
  replica: string;
  /** Found again by label at a start (recoverJobs), not spawned. */
  found: boolean;
  /** Whether its replica's heartbeat is younger than the stale limit. */
  live: boolean;
}

/** The spawn jobs of every replica. */
export class PgSpawnJobLog extends PgStore {
  /** Open a pool of its own on `url` (migrated), ended by `close()`. */
  static async open(url: string, options: ConnectOptions = {}): Promise<PgSpawnJobLog> {
    return new PgSpawnJobLog(await openMigrated(url, options), { ownsPool: true });
  }

  /**
   * Write `replica`'s job as it is now, unless the row is newer (`updatedAt`).
   * @returns whether the row now holds this write.
   */
  async put(replica: string, job: SpawnJob, found = false): Promise<boolean> {
    const rows = await this.sql.unsafe(
      `INSERT INTO spawn_jobs(id, replica, session_id, repo, branch, state, container_id, error, found,
          created_at, updated_at)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
        ON CONFLICT (id) DO UPDATE SET state = excluded.state, container_id = excluded.container_id,
          error = excluded.error, branch = excluded.branch, updated_at = excluded.updated_at
          WHERE spawn_jobs.updated_at <= excluded.updated_at
        RETURNING id`,
      [
        job.id,
        replica,
        job.sessionId,
        job.repo,
        job.branch,
        job.state,
        job.containerId,
        job.error,
        found,
        job.createdAt,
        job.updatedAt,
      ],
    );
    return rows.length === 1;
  }

  /** The newest `limit` jobs of replicas other than `replica`, newest first, each with its replica's health. */
  async others(replica: string, staleMs: number, limit: number): Promise<SharedJobRow[]> {
    const rows = await this.sql.unsafe(
      `SELECT j.*, coalesce(r.seen_at > ${NOW_MS} - $2, false) AS live
        FROM spawn_jobs j LEFT JOIN replicas r ON r.id = j.replica
        WHERE j.replica <> $1 ORDER BY j.created_at DESC, j.id LIMIT $3`,
      [replica, staleMs, limit],
    );
    return rows.map((r) => ({
      job: jobOf(r),
      replica: r.replica as string,
      found: r.found as boolean,
      live: r.live as boolean,
    }));
  }

  /** `replica`'s newest `limit` jobs (a restarted replica takes back those of its last run). */
  async own(replica: string, limit: number): Promise<{ job: SpawnJob; found: boolean }[]> {
    const rows = await this.sql.unsafe(
      `SELECT * FROM spawn_jobs WHERE replica = $1 ORDER BY created_at DESC, id LIMIT $2`,
      [replica, limit],
    );
    return rows.map((r) => ({ job: jobOf(r), found: r.found as boolean }));
  }

  /**
   * Bound the table: of the jobs by age, those past the newest `keep` go when finished, and every one past
   * `2 × keep` (a list shows at most `keep`, so none of these is shown anywhere but on its own replica).
   * @returns how many rows went.
   */
  async prune(keep: number): Promise<number> {
    const rows = await this.sql.unsafe(
      `DELETE FROM spawn_jobs WHERE id IN (
          SELECT id FROM (
            SELECT id, state, row_number() OVER (ORDER BY created_at DESC, id) AS n FROM spawn_jobs) ranked
          WHERE n > $1 AND (state IN ('failed', 'stopped') OR n > $2))
        RETURNING id`,
      [keep, 2 * keep],
    );
    return rows.length;
  }
}

function jobOf(r: Record<string, unknown>): SpawnJob {
  return {
    id: r.id as string,
    repo: r.repo as string,
    branch: (r.branch as string | null) ?? null,
    state: r.state as SpawnState,
    sessionId: r.session_id as string,
    containerId: (r.container_id as string | null) ?? null,
    error: (r.error as string | null) ?? null,
    createdAt: safeInteger(r.created_at),
    updatedAt: safeInteger(r.updated_at),
  };
}
