/**
 * Approvals in PostgreSQL, for several replicas on one database. A decision is one conditional UPDATE
 * (`WHERE state = 'pending' RETURNING`): of two replicas deciding at once, the second waits for the first's
 * row lock and, once that commits, finds the row no longer pending (READ COMMITTED re-checks the condition on
 * the committed row), changes nothing and reads the winner's row. A decision with writes of its own (a budget
 * card's raise) runs them in the same transaction, after the UPDATE, while the row is still locked.
 *
 * Hints: a `pg_notify` of the session id in a statement of its own after the commit (a NOTIFY-ing transaction
 * takes a global lock at commit, and the hint is lossy anyway), heard on a dedicated LISTEN connection kept
 * alive by lib/storage/pg_listener.ts; every (re)LISTEN and every `APPROVAL_SWEEP_MS` the pending approvals
 * are compared for what a lost hint missed (a partial index keeps that read to the pending rows).
 *
 * The rows are not tied to the `sessions` table: as on SQLite, a session's approvals go when the owner of
 * approvals deletes them (`deleteSession`), so both stores behave alike.
 */
import type postgres from "postgres";
import { NotFoundError } from "../errors.ts";
import type { ApprovalSource, ApprovalState } from "../protocol.ts";
import { type ConnectOptions, PgStore, type Sql } from "./pg_client.ts";
import { openMigrated } from "./pg_migrate.ts";
import { LISTENER_PING_MS, listenerClient, type PgListener, wakeupsListener } from "./pg_listener.ts";
import type { Wakeups } from "./command_queue.ts";
import {
  APPROVAL_SWEEP_MS,
  type ApprovalLog,
  type ApprovalRecord,
  type ApprovalRequest,
  type ApprovalsHint,
  approvalWakeups,
  type Decided,
  type FinalState,
} from "./approval_log.ts";

/** The NOTIFY channel; the payload is a session id (empty: a listener's liveness ping). */
export const APPROVALS_CHANNEL = "lvmh_appr";
/** NOTIFY refuses a payload of 8000 bytes or more; a longer session id is left to the sweep. */
const MAX_PAYLOAD_BYTES = 7_999;

/** A decision's own writes on PostgreSQL: statements on the decision's transaction. */
export type PgDecisionWrites = (tx: postgres.TransactionSql) => Promise<unknown>;

export interface PgApprovalLogOptions {
  /** Sweep period (default `APPROVAL_SWEEP_MS`). */
  sweepMs?: number;
  /** Ping period of the listener's watchdog (default 5 s). */
  pingMs?: number;
  /** true: `close()` ends the pool. */
  ownsPool?: boolean;
}

// Ties in createdAt sort by id bytewise, as SQLite does, whatever the database's collation.
const ORDER = `ORDER BY created_at, id COLLATE "C"`;

/** The columns as `ApprovalStore` names them, so both stores build records alike. */
const COLUMNS = `id, session_id AS "sessionId", tool_call_id AS "toolCallId", tool_name AS "toolName", args,
  state, decided_by AS "decidedBy", decided_at AS "decidedAt", reason, created_at AS "createdAt",
  applied_at AS "appliedAt", source, kind`;

/** The approval log over a PostgreSQL pool whose database is migrated. */
export class PgApprovalLog extends PgStore implements ApprovalLog<PgDecisionWrites> {
  #listener: PgListener;
  #wakeups: Wakeups;
  #closed = false;

  /**
   * @param connectListener opens the client whose one connection LISTENs (again after the watchdog dropped
   *   the previous one); never the pool itself, whose connections come and go.
   */
  constructor(sql: Sql, connectListener: () => Sql, options: PgApprovalLogOptions = {}) {
    super(sql, options);
    this.#wakeups = approvalWakeups(async () => {
      const rows = await this.sql.unsafe(
        `SELECT id, session_id AS "sessionId" FROM approvals WHERE state = 'pending' ${ORDER}`,
      );
      return rows as unknown as { id: string; sessionId: string }[];
    }, options.sweepMs ?? APPROVAL_SWEEP_MS);
    this.#listener = wakeupsListener(this.#wakeups, {
      channel: APPROVALS_CHANNEL,
      connect: connectListener,
      pool: sql,
      pingMs: options.pingMs ?? LISTENER_PING_MS,
    });
  }

  /**
   * Connect to `url` and migrate its schema (lib/storage/pg_migrate.ts).
   * @throws {Error} when the database cannot be reached or migrated; the pool is then closed.
   */
  static async open(
    url: string,
    options: ConnectOptions & Pick<PgApprovalLogOptions, "sweepMs" | "pingMs"> = {},
  ): Promise<PgApprovalLog> {
    const sql = await openMigrated(url, options);
    const listener = listenerClient(url, options);
    return new PgApprovalLog(sql, listener, {
      sweepMs: options.sweepMs,
      pingMs: options.pingMs,
      ownsPool: true,
    });
  }

  async insert(a: ApprovalRequest): Promise<boolean> {
    const rows = await this
      .sql`INSERT INTO approvals(id, session_id, tool_call_id, tool_name, args, created_at, kind)
      VALUES (${a.id}, ${a.sessionId}, ${a.toolCallId}, ${a.toolName}, ${JSON.stringify(a.args ?? null)},
        ${a.createdAt}, ${a.kind ?? null})
      ON CONFLICT (id) DO NOTHING RETURNING id`;
    if (rows.length) await this.#hint(a.sessionId);
    return rows.length > 0;
  }

  async get(id: string): Promise<ApprovalRecord | null> {
    const [row] = await this.sql.unsafe(`SELECT ${COLUMNS} FROM approvals WHERE id = $1`, [id]);
    return row ? record(row) : null;
  }

  async decide(
    id: string,
    state: FinalState,
    by: string,
    reason: string | null,
    also?: PgDecisionWrites,
  ): Promise<Decided> {
    const update = (sql: Sql | postgres.TransactionSql) =>
      sql.unsafe(
        `UPDATE approvals SET state = $1, decided_by = $2, decided_at = $3, reason = $4
          WHERE id = $5 AND state = 'pending' RETURNING ${COLUMNS}`,
        [state, by, Date.now(), reason, id],
      );
    // Without writes of its own the decision is one statement: no transaction round trips.
    const [row] = also
      ? await this.sql.begin(async (tx) => {
        const rows = await update(tx);
        if (rows.length) await also(tx);
        return rows;
      })
      : await update(this.sql);
    if (row) {
      const approval = record(row);
      await this.#hint(approval.sessionId);
      return { won: true, approval };
    }
    // Not pending any more: the winner committed before our UPDATE looked, so this read sees its answer.
    const approval = await this.get(id);
    if (!approval) throw new NotFoundError(`Approval "${id}" does not exist`);
    return { won: false, approval };
  }

  async overrule(id: string, state: FinalState, by: string): Promise<void> {
    const rows = await this.sql`UPDATE approvals
      SET state = ${state}, decided_by = ${by}, decided_at = ${Date.now()}, reason = NULL
      WHERE id = ${id} RETURNING session_id`;
    if (rows.length) await this.#hint(rows[0].session_id as string);
  }

  async applied(id: string, source: ApprovalSource): Promise<boolean> {
    const rows = await this.sql`UPDATE approvals SET applied_at = ${Date.now()}, source = ${source}
      WHERE id = ${id} AND applied_at IS NULL RETURNING session_id`;
    if (rows.length) await this.#hint(rows[0].session_id as string);
    return rows.length > 0;
  }

  async pending(): Promise<ApprovalRecord[]> {
    const rows = await this.sql.unsafe(`SELECT ${COLUMNS} FROM approvals WHERE state = 'pending' ${ORDER}`);
    return rows.map(record);
  }

  async list(filter: { sessionId?: string; state?: ApprovalState } = {}): Promise<ApprovalRecord[]> {
    const rows = await this.sql.unsafe(
      `SELECT ${COLUMNS} FROM approvals
        WHERE ($1::text IS NULL OR session_id = $1) AND ($2::text IS NULL OR state = $2) ${ORDER} LIMIT 10000`,
      [filter.sessionId ?? null, filter.state ?? null],
    );
    return rows.map(record);
  }

  async deleteSession(sessionId: string): Promise<void> {
    const gone = await this.sql`DELETE FROM approvals WHERE session_id = ${sessionId}`;
    if (gone.count) await this.#hint(sessionId);
  }

  subscribe(onChange: ApprovalsHint): () => void {
    const stop = this.#wakeups.add(onChange);
    // The listener stays until `close()`: one made anew per subscriber would miss hints sent before it is in
    // place.
    if (!this.#closed) void this.#listener.start();
    return stop;
  }

  override async close(): Promise<void> {
    this.#closed = true;
    this.#wakeups.stop();
    await this.#listener.close();
    await super.close();
  }

  /** After a commit: tell every replica. A hint that fails to go is found by the sweeps. */
  async #hint(sessionId: string): Promise<void> {
    if (new TextEncoder().encode(sessionId).length > MAX_PAYLOAD_BYTES) return;
    await this.sql`SELECT pg_notify(${APPROVALS_CHANNEL}, ${sessionId})`.catch(() => {});
  }
}

/** A row as `ApprovalStore` returns it: args parsed, `kind` only for a budget card. */
function record(row: postgres.Row): ApprovalRecord {
  const { kind, args, ...rest } = row;
  return {
    ...rest,
    args: JSON.parse(args as string),
    ...(kind === "budget" ? { kind } : {}),
  } as ApprovalRecord;
}
