/**
 * What replicas on one PostgreSQL database keep about each other and about the sessions they hold, beside the
 * event log: each replica's heartbeat (`replicas`), and the session row's holder, snapshot and ask set. A
 * session is online on another replica while its `holder` names a replica whose heartbeat is younger than the
 * stale limit: a SIGKILLed replica cannot clear its sessions' holder, its heartbeat just stops. Times are the
 * database's clock (ms epoch), so the replicas' clocks need not agree.
 */
import type { AskSet, SessionInfo } from "../protocol.ts";
import { PgStore } from "./pg_client.ts";
import { safeInteger } from "./event_log.ts";
import { sessionNotFound } from "../errors.ts";

const NOW_MS = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint";

/** A session row as a hello on this replica reads it after its claim. */
export interface HeldRow {
  lastSeq: number;
  /** The session's own ask set, null for the daemon's default. */
  ask: AskSet | null;
}

/** The replicas' heartbeats and the session rows' holder, snapshot and ask set. */
export class PgReplicas extends PgStore {
  /**
   * Say that `replicaId` is alive now.
   * @returns the database's clock at that moment (ms epoch).
   */
  async beat(replicaId: string): Promise<number> {
    const [row] = await this.sql.unsafe(
      `INSERT INTO replicas(id, seen_at) VALUES ($1, ${NOW_MS})
        ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at RETURNING seen_at`,
      [replicaId],
    );
    return safeInteger(row.seen_at);
  }

  /**
   * Make `replicaId` the session's holder with a new epoch, unless the statement runs after `notAfter` (the
   * database's clock, ms epoch): a claim held up on its way (a connection to a database coming back) must
   * not land after its plugin gave up on it and took the session to another replica.
   * @returns the new epoch; null when too late.
   * @throws {NotFoundError} for an unknown session.
   */
  async claim(sessionId: string, replicaId: string, notAfter: number): Promise<number | null> {
    const [row] = await this.sql.unsafe(
      `WITH claimed AS (
          UPDATE sessions SET holder = $2, holder_epoch = holder_epoch + 1, plugin_features = NULL
            WHERE id = $1 AND ${NOW_MS} <= $3 RETURNING holder_epoch)
        SELECT (SELECT holder_epoch FROM claimed) AS epoch, EXISTS (SELECT 1 FROM sessions WHERE id = $1) AS known`,
      [sessionId, replicaId, notAfter],
    );
    if (!row.known) throw sessionNotFound(sessionId);
    return row.epoch === null ? null : safeInteger(row.epoch);
  }

  /** `replicaId` stopped cleanly: it holds nothing from now on. */
  async forget(replicaId: string): Promise<void> {
    await this.sql`DELETE FROM replicas WHERE id = ${replicaId}`;
  }

  /** The sessions held by replicas other than `replicaId` that were seen within `staleMs`. */
  async heldElsewhere(replicaId: string, staleMs: number): Promise<string[]> {
    const rows = await this.sql.unsafe(
      `SELECT s.id FROM sessions s JOIN replicas r ON r.id = s.holder
        WHERE s.holder <> $1 AND r.seen_at > ${NOW_MS} - $2`,
      [replicaId, staleMs],
    );
    return rows.map((r) => r.id as string);
  }

  /** `replicaId`'s socket of the session went: clear the holder, unless a newer claim (epoch) was made. */
  async release(sessionId: string, replicaId: string, epoch: number): Promise<void> {
    await this.sql`UPDATE sessions SET holder = NULL
      WHERE id = ${sessionId} AND holder = ${replicaId} AND holder_epoch = ${epoch}`;
  }

  /**
   * Move a session this replica holds at `epoch` to the next epoch, unless another claim was made meanwhile.
   * @returns the new epoch, or null when the session is no longer held at `epoch` by `replicaId`.
   */
  async renew(sessionId: string, replicaId: string, epoch: number): Promise<number | null> {
    const [row] = await this.sql`UPDATE sessions SET holder_epoch = holder_epoch + 1
      WHERE id = ${sessionId} AND holder = ${replicaId} AND holder_epoch = ${epoch} RETURNING holder_epoch`;
    return row ? safeInteger(row.holder_epoch) : null;
  }

  /** True when some replica claimed the session and has not released it (it may since have died). */
  async held(sessionId: string): Promise<boolean> {
    const [row] = await this.sql`SELECT holder IS NOT NULL AS held FROM sessions WHERE id = ${sessionId}`;
    return row?.held === true;
  }

  /** Store the snapshot a plugin's hello carried; returns where the row stands (null: no such row). */
  async setInfo(info: SessionInfo): Promise<HeldRow | null> {
    const [row] = await this.sql`UPDATE sessions SET info = ${JSON.stringify(info)} WHERE id = ${info.id}
      RETURNING last_seq, ask`;
    return row
      ? { lastSeq: safeInteger(row.last_seq), ask: row.ask ? JSON.parse(row.ask as string) as AskSet : null }
      : null;
  }

  /** A session's snapshot, or null when it has no row. */
  async info(sessionId: string): Promise<SessionInfo | null> {
    const [row] = await this.sql`SELECT info FROM sessions WHERE id = ${sessionId}`;
    return row ? JSON.parse(row.info as string) as SessionInfo : null;
  }

  /**
   * Record what the plugin that `replicaId` welcomed at `epoch` supports (its hello's features); nothing when
   * another claim was made since.
   */
  async setFeatures(sessionId: string, replicaId: string, epoch: number, features: string[]): Promise<void> {
    await this.sql`UPDATE sessions SET plugin_features = ${JSON.stringify(features)}
      WHERE id = ${sessionId} AND holder = ${replicaId} AND holder_epoch = ${epoch}`;
  }

  /**
   * The features of the session's current holder's plugin (null while not known yet: claimed, not welcomed),
   * and the holder's epoch (a new one means a new socket).
   */
  async features(sessionId: string): Promise<{ features: string[] | null; epoch: number } | null> {
    const [row] = await this.sql`SELECT plugin_features, holder_epoch FROM sessions WHERE id = ${sessionId}`;
    if (!row) return null;
    const features = row.plugin_features ? JSON.parse(row.plugin_features as string) as string[] : null;
    return { features, epoch: safeInteger(row.holder_epoch) };
  }

  /** Store a session's own ask set (every replica's welcome reads it from the row). */
  async setAsk(sessionId: string, ask: AskSet): Promise<void> {
    await this.sql`UPDATE sessions SET ask = ${JSON.stringify(ask)} WHERE id = ${sessionId}`;
  }
}
