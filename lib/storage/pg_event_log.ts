/**
 * The event log in PostgreSQL, for several daemon replicas on one database. An append is one call of the
 * server-side function of lib/storage/pg_append.ts (one round trip, one transaction); reads are plain indexed
 * range scans on (session_id, seq). Nothing here NOTIFYs: a wake-up for readers on other replicas belongs after
 * the commit, coalesced, never inside the hot transaction.
 */
import type { AgentEvent, SessionInfo } from "../protocol.ts";
import { eventJson, payloadOf, storedForm } from "../event_codec.ts";
import { sessionNotFound } from "../errors.ts";
import {
  type AppendOptions,
  checkEvent,
  type EventLog,
  type EventRow,
  type EventsPage,
  FencedError,
  type LoggedSession,
  safeInteger,
  type SessionCommit,
} from "./event_log.ts";
import { type ConnectOptions, PgStore, type Sql } from "./pg_client.ts";
import { openMigrated } from "./pg_migrate.ts";
import { PG_FENCED, PG_UNKNOWN_SESSION } from "./pg_append.ts";

/** The event log over a PostgreSQL pool. */
export class PgEventLog extends PgStore implements EventLog {
  /**
   * Connect to `url` and migrate its schema (see lib/storage/pg_migrate.ts).
   * @throws {Error} when the database cannot be reached or migrated; the pool is then closed.
   */
  static async open(url: string, options: ConnectOptions = {}): Promise<PgEventLog> {
    const sql = await openMigrated(url, options);
    return new PgEventLog(sql, { ownsPool: true });
  }

  async ensureSession(info: SessionInfo): Promise<void> {
    await this.sql`INSERT INTO sessions(id, info) VALUES (${info.id}, ${JSON.stringify(info)})
      ON CONFLICT (id) DO NOTHING`;
  }

  async claimHolder(sessionId: string, replicaId: string): Promise<number> {
    const rows = await this.sql`UPDATE sessions SET holder = ${replicaId}, holder_epoch = holder_epoch + 1
      WHERE id = ${sessionId} RETURNING holder_epoch`;
    if (!rows.length) throw sessionNotFound(sessionId);
    return safeInteger(rows[0].holder_epoch);
  }

  async append(
    sessionId: string,
    events: readonly AgentEvent[],
    options: AppendOptions,
  ): Promise<SessionCommit> {
    const n = events.length;
    const { seqs, ts, types, payloads } = columns(sessionId, events);
    let row;
    try {
      [row] = await this.sql`SELECT o_after, o_last_seq, o_seqs, o_inserted, o_info_changed
        FROM ${appendCall(this.sql, sessionId, options.epoch, { seqs, ts, types, payloads })}`;
    } catch (error) {
      throw domainError(error, sessionId, options.epoch);
    }
    const stored = (row.o_seqs as unknown[] ?? []).map(safeInteger);
    const inserted = new Set((row.o_inserted as unknown[]).map(safeInteger));
    const commit: SessionCommit = {
      sessionId,
      after: safeInteger(row.o_after),
      lastSeq: safeInteger(row.o_last_seq),
      inserted: [],
      infoChanged: Boolean(row.o_info_changed),
    };
    for (let i = 0; i < n; i++) {
      const seq = stored[i];
      // The first event of a seq that went in; a replay or a repeat within the batch was not stored.
      if (!inserted.delete(seq)) continue;
      const event = events[i].seq === seq ? events[i] : { ...events[i], seq } as AgentEvent;
      const json = eventJson({ sessionId, seq, ts: ts[i], type: types[i], payload: payloads[i] });
      commit.inserted.push({ seq, json, event: storedForm(event, ts[i]) });
    }
    return commit;
  }

  /**
   * `append` for a writer that needs only where the log stands after it (a replica's ingest, which stores and
   * publishes the events from its own copy): nothing is encoded back, and only counts cross the wire.
   * @returns the session's last seq after the batch and how many of the events went in (replays left out).
   * @throws as `append`.
   */
  async appendCounted(
    sessionId: string,
    events: readonly AgentEvent[],
    options: AppendOptions,
  ): Promise<{ lastSeq: number; inserted: number }> {
    const { seqs, ts, types, payloads } = columns(sessionId, events, true);
    let row;
    try {
      [row] = await this.sql`SELECT o_last_seq, coalesce(cardinality(o_inserted), 0) AS inserted
        FROM ${appendCall(this.sql, sessionId, options.epoch, { seqs, ts, types, payloads })}`;
    } catch (error) {
      throw domainError(error, sessionId, options.epoch);
    }
    return { lastSeq: safeInteger(row.o_last_seq), inserted: Number(row.inserted) };
  }

  async events(sessionId: string, page: EventsPage): Promise<EventRow[]> {
    const rows = page.before !== undefined
      ? (await this.sql`SELECT seq, ts, type, payload FROM events
          WHERE session_id = ${sessionId} AND seq < ${page.before} ORDER BY seq DESC LIMIT ${page.limit}`)
        .reverse()
      : await this.sql`SELECT seq, ts, type, payload FROM events
          WHERE session_id = ${sessionId} AND seq > ${page.after} ORDER BY seq LIMIT ${page.limit}`;
    return rows.map((r) => ({
      sessionId,
      seq: safeInteger(r.seq),
      ts: safeInteger(r.ts),
      type: r.type as string,
      payload: r.payload as string,
    }));
  }

  async lastSeq(sessionId: string): Promise<number> {
    const rows = await this.sql`SELECT last_seq FROM sessions WHERE id = ${sessionId}`;
    return rows.length ? safeInteger(rows[0].last_seq) : 0;
  }

  async sessions(): Promise<LoggedSession[]> {
    // "C" collation: ids in code-point order, as the SQLite log sorts them, whatever the database's locale.
    const rows = await this.sql`SELECT id, last_seq, last_event_at FROM sessions
      ORDER BY coalesce(last_event_at, 0) DESC, id COLLATE "C"`;
    return rows.map((r) => ({
      id: r.id as string,
      lastSeq: safeInteger(r.last_seq),
      lastEventAt: r.last_event_at === null ? null : safeInteger(r.last_event_at),
    }));
  }

  async deleteSession(sessionId: string): Promise<boolean> {
    // The session row first: its lock waits for an append in flight, and any later append finds no session.
    return await this.sql.begin(async (tx) => {
      const gone = await tx`DELETE FROM sessions WHERE id = ${sessionId} RETURNING id`;
      await tx`DELETE FROM events WHERE session_id = ${sessionId}`;
      return gone.length > 0;
    });
  }
}

/** The function's own SQLSTATEs as the error kinds callers catch; anything else as it came. */
function domainError(error: unknown, sessionId: string, epoch: number): unknown {
  const e = error as { code?: string; detail?: string };
  if (e?.code === PG_FENCED) return new FencedError(sessionId, epoch, Number(e.detail));
  if (e?.code === PG_UNKNOWN_SESSION) return sessionNotFound(sessionId);
  return error;
}

/**
 * A batch as the append function takes it: one array per column, each event checked.
 * @param keep keep each payload with its event for the replica's copy (`payloadOf`'s `keep`).
 */
function columns(sessionId: string, events: readonly AgentEvent[], keep = false) {
  const n = events.length;
  const seqs = new Array<number>(n);
  const ts = new Array<number>(n);
  const types = new Array<string>(n);
  const payloads = new Array<string>(n);
  for (let i = 0; i < n; i++) {
    const event = events[i];
    checkEvent(sessionId, event);
    seqs[i] = event.seq;
    ts[i] = Math.trunc(event.ts);
    types[i] = event.type;
    payloads[i] = payloadOf(event, keep);
  }
  return { seqs, ts, types, payloads };
}

/** Joins a text column; no type name or JSON text holds it (JSON.stringify writes control characters escaped). */
const SEPARATOR = "\x01";

/**
 * The call of the append function with the batch's columns. Each column goes over as one text that the
 * server splits (`string_to_array`, in C): the driver's own array parameters escaped every payload in JS, a
 * tenth of the daemon's CPU under the ingest benchmark.
 */
function appendCall(
  sql: Sql,
  sessionId: string,
  epoch: number,
  c: { seqs: number[]; ts: number[]; types: string[]; payloads: string[] },
) {
  return sql`lvmh_append_events(${sessionId}, ${epoch},
    string_to_array(${c.seqs.join(",")}::text, ',')::bigint[], string_to_array(${
    c.ts.join(",")
  }::text, ',')::bigint[],
    string_to_array(${c.types.join(SEPARATOR)}::text, chr(1)), string_to_array(${
    c.payloads.join(SEPARATOR)
  }::text, chr(1)))`;
}
