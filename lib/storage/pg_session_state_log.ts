/**
 * Budgets, working copies and workers in PostgreSQL, for several replicas on one database: the SQLite tables'
 * columns (`session_budgets`, `session_workspaces`, `session_containers`, migration 8). A raise is one upsert
 * that adds in place; a worker's move locks its row (`FOR UPDATE`) and checks the state the caller read, so of
 * two replicas moving one worker at once the second waits and then sees the first's state.
 */
import type postgres from "postgres";
import { type ConnectOptions, PgStore, type Sql } from "./pg_client.ts";
import { openMigrated } from "./pg_migrate.ts";
import { safeInteger } from "./event_log.ts";
import { SHA_RE } from "../workspaces.ts";
import { keepTail } from "../spawn/containers.ts";
import {
  type BudgetFallback,
  type BudgetLimits,
  type BudgetRow,
  type ContainerMove,
  type ContainerRow,
  type ContainerState,
  type SessionStateLog,
  type WorkspaceRecord,
  type WorkspaceStart,
} from "./session_state_log.ts";

/** Writes run on a caller's transaction. */
export type PgStateWrites = (tx: postgres.TransactionSql) => Promise<unknown>;

/** The session state log over a PostgreSQL pool whose database is migrated. */
export class PgSessionStateLog extends PgStore implements SessionStateLog<PgStateWrites> {
  /**
   * Connect to `url` and migrate its schema (lib/storage/pg_migrate.ts).
   * @throws {Error} when the database cannot be reached or migrated; the pool is then closed.
   */
  static async open(url: string, options: ConnectOptions = {}): Promise<PgSessionStateLog> {
    const sql = await openMigrated(url, options);
    return new PgSessionStateLog(sql, { ownsPool: true });
  }

  async budget(sessionId: string): Promise<BudgetRow | null> {
    const [r] = await this.sql`SELECT * FROM session_budgets WHERE session_id = ${sessionId}`;
    return r ? budgetOf(r) : null;
  }

  async budgetIds(): Promise<string[]> {
    return (await this.sql`SELECT session_id FROM session_budgets`).map((r) => r.session_id as string);
  }

  async budgets(): Promise<BudgetRow[]> {
    return (await this.sql`SELECT * FROM session_budgets`).map(budgetOf);
  }

  async putBudget(sessionId: string, b: BudgetLimits, source: BudgetRow["source"]): Promise<void> {
    await this.sql`INSERT INTO session_budgets(session_id, max_cost, max_tokens, on_reach, raised_cost,
        raised_tokens, source, updated_at)
      VALUES (${sessionId}, ${b.maxCost}, ${b.maxTokens}, ${b.onReach}, 0, 0, ${source}, ${Date.now()})
      ON CONFLICT(session_id) DO UPDATE SET max_cost = excluded.max_cost, max_tokens = excluded.max_tokens,
        on_reach = excluded.on_reach, raised_cost = 0, raised_tokens = 0, source = excluded.source,
        updated_at = excluded.updated_at`;
  }

  async raiseBudget(sessionId: string, fallback: BudgetFallback | null): Promise<boolean> {
    return await raise(this.sql, sessionId, fallback);
  }

  raiseBudgetWrites(sessionId: string, fallback: BudgetFallback | null): PgStateWrites {
    return (tx) => raise(tx, sessionId, fallback);
  }

  async deleteBudget(sessionId: string): Promise<void> {
    await this.sql`DELETE FROM session_budgets WHERE session_id = ${sessionId}`;
  }

  async recordWorkspace(sessionId: string, w: WorkspaceStart, now = Date.now()): Promise<void> {
    // The checks of lib/workspaces.ts: a spawn bug, not user input.
    if (!SHA_RE.test(w.baseSha)) {
      throw new Error(`workspace ${sessionId}: base sha ${w.baseSha} is not a sha`);
    }
    if (!w.repo || !w.baseBranch || !w.branch) throw new Error(`workspace ${sessionId}: empty field`);
    await this.sql`INSERT INTO session_workspaces(session_id, repo, base_branch, base_sha, branch, created_at)
      VALUES (${sessionId}, ${w.repo}, ${w.baseBranch}, ${w.baseSha}, ${w.branch}, ${now})
      ON CONFLICT(session_id) DO NOTHING`;
  }

  async workspace(sessionId: string): Promise<WorkspaceRecord | null> {
    const [r] = await this.sql`SELECT * FROM session_workspaces WHERE session_id = ${sessionId}`;
    return r
      ? {
        sessionId: r.session_id,
        repo: r.repo,
        baseBranch: r.base_branch,
        baseSha: r.base_sha,
        branch: r.branch,
        createdAt: safeInteger(r.created_at),
      }
      : null;
  }

  async deleteWorkspace(sessionId: string): Promise<void> {
    await this.sql`DELETE FROM session_workspaces WHERE session_id = ${sessionId}`;
  }

  async container(sessionId: string): Promise<ContainerRow | null> {
    const [r] = await this.sql`SELECT session_id, repo, state, exit_code, reason, updated_at
      FROM session_containers WHERE session_id = ${sessionId}`;
    return r ? containerOf(r) : null;
  }

  async containers(): Promise<ContainerRow[]> {
    return (await this.sql`SELECT session_id, repo, state, exit_code, reason, updated_at
      FROM session_containers`).map(containerOf);
  }

  async containerLogs(sessionId: string): Promise<string | null> {
    const [r] = await this.sql`SELECT logs FROM session_containers WHERE session_id = ${sessionId}`;
    return (r?.logs as string | null | undefined) ?? null;
  }

  async setContainer(
    sessionId: string,
    repo: string,
    state: ContainerState,
    move: ContainerMove = {},
  ): Promise<boolean> {
    return await this.sql.begin(async (tx) => {
      const [before] = await tx`SELECT state, exit_code, logs FROM session_containers
        WHERE session_id = ${sessionId} FOR UPDATE`;
      if (move.from && !move.from.includes((before?.state as ContainerState | undefined) ?? null)) {
        return false;
      }
      // What lib/spawn/containers.ts keeps: `starting` forgets the earlier worker's logs and end; an end keeps
      // the logs given, else the ones kept; only `crashed` has an exit code and a reason.
      const ended = state === "stopped" || state === "crashed";
      const logs = state === "starting"
        ? null
        : move.logs !== undefined
        ? keepTail(move.logs)
        : (before?.logs as string | null | undefined) ?? null;
      const end = state === "crashed"
        ? move.end ?? { exitCode: before?.exit_code ?? -1, reason: "unknown" }
        : null;
      const kept = ended || state === "running" ? logs : null;
      const row = [sessionId, repo, state, end?.exitCode ?? null, end?.reason ?? null, kept, Date.now()];
      if (before) {
        await tx`UPDATE session_containers SET repo = ${repo}, state = ${state}, exit_code = ${row[3]},
          reason = ${row[4]}, logs = ${kept}, updated_at = ${row[6]} WHERE session_id = ${sessionId}`;
        return true;
      }
      // No row to lock: a concurrent first write is settled by the key. With `from`, a row someone else
      // made meanwhile means the state was not the one read; without it, the last write wins.
      const made = await tx`INSERT INTO session_containers(session_id, repo, state, exit_code, reason, logs,
          updated_at) VALUES (${sessionId}, ${repo}, ${state}, ${row[3]}, ${row[4]}, ${kept}, ${row[6]})
        ON CONFLICT(session_id) DO ${
        move.from
          ? tx`NOTHING`
          : tx`UPDATE SET repo = excluded.repo, state = excluded.state, exit_code = excluded.exit_code,
          reason = excluded.reason, logs = excluded.logs, updated_at = excluded.updated_at`
      } RETURNING 1`;
      return made.length > 0;
    });
  }

  async deleteContainer(sessionId: string, from?: readonly ContainerState[]): Promise<boolean> {
    const rows = from
      ? await this.sql`DELETE FROM session_containers WHERE session_id = ${sessionId}
          AND state = ANY(${from as string[]}) RETURNING 1`
      : await this.sql`DELETE FROM session_containers WHERE session_id = ${sessionId} RETURNING 1`;
    return from ? rows.length > 0 : true;
  }
}

/** Raise by the budget's own size in one statement, writing `fallback` as the row when there is none. */
async function raise(sql: Sql | postgres.TransactionSql, id: string, fb: BudgetFallback | null) {
  const now = Date.now();
  const rows = fb
    ? await sql`INSERT INTO session_budgets(session_id, max_cost, max_tokens, on_reach, raised_cost,
        raised_tokens, source, updated_at)
      VALUES (${id}, ${fb.maxCost}, ${fb.maxTokens}, ${fb.onReach}, ${fb.maxCost ?? 0}, ${fb.maxTokens ?? 0},
        ${fb.source}, ${now})
      ON CONFLICT(session_id) DO UPDATE SET
        raised_cost = session_budgets.raised_cost + coalesce(session_budgets.max_cost, 0),
        raised_tokens = session_budgets.raised_tokens + coalesce(session_budgets.max_tokens, 0),
        updated_at = excluded.updated_at
      RETURNING 1`
    : await sql`UPDATE session_budgets SET raised_cost = raised_cost + coalesce(max_cost, 0),
        raised_tokens = raised_tokens + coalesce(max_tokens, 0), updated_at = ${now}
      WHERE session_id = ${id} RETURNING 1`;
  return rows.length > 0;
}

function budgetOf(r: postgres.Row): BudgetRow {
  return {
    sessionId: r.session_id,
    maxCost: r.max_cost === null ? null : Number(r.max_cost),
    maxTokens: r.max_tokens === null ? null : Number(r.max_tokens),
    onReach: r.on_reach,
    raisedCost: Number(r.raised_cost),
    raisedTokens: Number(r.raised_tokens),
    source: r.source,
  };
}

function containerOf(r: postgres.Row): ContainerRow {
  return {
    sessionId: r.session_id,
    repo: r.repo,
    state: r.state,
    exitCode: r.exit_code ?? null,
    reason: r.reason ?? null,
    updatedAt: safeInteger(r.updated_at),
  };
}
