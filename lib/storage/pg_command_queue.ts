/**
 * The command queue in PostgreSQL, for several replicas on one database. An enqueue is one statement (the
 * session row's command counter moved and the row inserted: one transaction, the row lock held to commit, so
 * positions commit in order), then a `pg_notify` of the session id on its own, after the commit: NOTIFY takes
 * a global lock at commit and must stay out of any busy transaction, and it is only a hint anyway (lost while
 * a listener reconnects). Take and ack lock the session row `FOR SHARE` while they check the holder's epoch,
 * so a `claimHolder` (an UPDATE of that row) waits for them or they see its new epoch: no write of a fenced
 * holder lands after a takeover.
 *
 * Wake-up: LISTEN on a dedicated connection kept alive by lib/storage/pg_listener.ts (re-LISTEN after a close,
 * a watchdog for a connection gone silent; each (re)LISTEN runs a sweep for the hints sent in the gap), and a
 * sweep of the partial index every few hundred ms.
 */
import type postgres from "postgres";
import { sessionNotFound } from "../errors.ts";
import { FencedError, safeInteger } from "./event_log.ts";
import { type ConnectOptions, PgStore, type Sql } from "./pg_client.ts";
import { openMigrated } from "./pg_migrate.ts";
import { LISTENER_PING_MS, listenerClient, type PgListener, wakeupsListener } from "./pg_listener.ts";
import {
  type CommandFrame,
  type CommandQueue,
  type CommandsHint,
  commandText,
  type Holder,
  type QueuedCommand,
  SWEEP_MS,
  TAKE_LIMIT,
  Wakeups,
} from "./command_queue.ts";

/** The NOTIFY channel; the payload is a session id (empty: a listener's liveness ping). */
export const COMMANDS_CHANNEL = "lvmh_cmd";
/** How often a subscribed queue pings the channel; a listener that heard nothing for 3 periods is replaced. */

export interface PgCommandQueueOptions {
  /** Sweep period (default `SWEEP_MS`). */
  sweepMs?: number;
  /** Ping period of the listener's watchdog (default 5 s). */
  pingMs?: number;
  /** true: `close()` ends the pool. */
  ownsPool?: boolean;
}

/** The command queue over a PostgreSQL pool whose database is migrated. */
export class PgCommandQueue extends PgStore implements CommandQueue {
  #listener: PgListener;
  #wakeups: Wakeups;
  #closed = false;

  /**
   * @param connectListener opens the client whose one connection LISTENs (again after the watchdog dropped
   *   the previous one); never the pool itself, whose connections come and go.
   */
  constructor(sql: Sql, connectListener: () => Sql, options: PgCommandQueueOptions = {}) {
    super(sql, options);
    this.#wakeups = new Wakeups(async () => {
      const rows = await this.sql`SELECT DISTINCT session_id FROM commands
        WHERE acked_at IS NULL AND taken_epoch IS NULL LIMIT 1000`;
      return rows.map((r) => r.session_id as string);
    }, options.sweepMs ?? SWEEP_MS);
    this.#listener = wakeupsListener(this.#wakeups, {
      channel: COMMANDS_CHANNEL,
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
    options: ConnectOptions & Pick<PgCommandQueueOptions, "sweepMs" | "pingMs"> = {},
  ): Promise<PgCommandQueue> {
    const sql = await openMigrated(url, options);
    const listener = listenerClient(url, options);
    return new PgCommandQueue(sql, listener, {
      sweepMs: options.sweepMs,
      pingMs: options.pingMs,
      ownsPool: true,
    });
  }

  async enqueue(sessionId: string, frame: CommandFrame): Promise<QueuedCommand> {
    const text = commandText(sessionId, frame);
    const enqueuedAt = Date.now();
    const rows = await this.sql`WITH counter AS (
        UPDATE sessions SET last_cmd_pos = last_cmd_pos + 1 WHERE id = ${sessionId} RETURNING last_cmd_pos)
      INSERT INTO commands(session_id, pos, frame, enqueued_at)
        SELECT ${sessionId}, last_cmd_pos, ${text}, ${enqueuedAt} FROM counter
      RETURNING pos`;
    if (!rows.length) throw sessionNotFound(sessionId);
    // Committed. A hint that fails to go is found by the sweeps; failing the enqueue would only invite a
    // second, duplicate, command.
    await this.sql`SELECT pg_notify(${COMMANDS_CHANNEL}, ${sessionId})`.catch(() => {});
    return { sessionId, pos: safeInteger(rows[0].pos), frame, enqueuedAt, redelivered: false };
  }

  async take(sessionId: string, holder: Holder, limit = TAKE_LIMIT): Promise<QueuedCommand[]> {
    const rows = await this.sql.begin(async (tx) => {
      await fence(tx, sessionId, holder.epoch);
      return await tx`WITH picked AS (
          SELECT pos, taken_epoch IS NOT NULL AS again FROM commands
            WHERE session_id = ${sessionId} AND acked_at IS NULL AND taken_epoch IS DISTINCT FROM ${holder.epoch}
            ORDER BY pos LIMIT ${limit} FOR UPDATE)
        UPDATE commands c SET taken_epoch = ${holder.epoch} FROM picked
          WHERE c.session_id = ${sessionId} AND c.pos = picked.pos
        RETURNING c.pos, c.frame, c.enqueued_at, picked.again`;
    });
    return rows.map((r) => ({
      sessionId,
      pos: safeInteger(r.pos),
      frame: JSON.parse(r.frame as string) as CommandFrame,
      enqueuedAt: safeInteger(r.enqueued_at),
      redelivered: Boolean(r.again),
    })).sort((a, b) => a.pos - b.pos);
  }

  async ack(sessionId: string, holder: Holder, positions: readonly number[]): Promise<number> {
    return await this.sql.begin(async (tx) => {
      await fence(tx, sessionId, holder.epoch);
      if (!positions.length) return 0;
      const done = await tx`UPDATE commands SET acked_at = ${Date.now()}
        WHERE session_id = ${sessionId} AND taken_epoch = ${holder.epoch} AND acked_at IS NULL
          AND pos = ANY(${positions as number[]}::bigint[])
        RETURNING pos`;
      return done.length;
    });
  }

  async unacknowledged(sessionId: string): Promise<number> {
    const [row] = await this.sql`SELECT count(*)::bigint AS n FROM commands
      WHERE session_id = ${sessionId} AND acked_at IS NULL`;
    return safeInteger(row.n);
  }

  subscribe(onSessionHasCommands: CommandsHint): () => void {
    const stop = this.#wakeups.add(onSessionHasCommands);
    if (!this.#closed) void this.#listener.start();
    // The listener stays until `close()`: a LISTEN made anew for each subscriber would miss the hints sent
    // before it is in place.
    return stop;
  }

  async prune(before: number): Promise<number> {
    // Commands of deleted sessions went with them (ON DELETE CASCADE).
    const gone = await this.sql`DELETE FROM commands WHERE acked_at IS NOT NULL AND acked_at < ${before}`;
    return gone.count;
  }

  override async close(): Promise<void> {
    this.#closed = true;
    this.#wakeups.stop();
    await this.#listener.close();
    await super.close();
  }
}

/**
 * Lock the session row for the rest of the transaction and check the holder's epoch.
 * @throws {NotFoundError} for an unknown session; {FencedError} for a stale epoch.
 */
async function fence(tx: postgres.TransactionSql, sessionId: string, epoch: number): Promise<void> {
  const [row] = await tx`SELECT holder_epoch FROM sessions WHERE id = ${sessionId} FOR SHARE`;
  if (!row) throw sessionNotFound(sessionId);
  const current = safeInteger(row.holder_epoch);
  if (current !== epoch) throw new FencedError(sessionId, epoch, current);
}
