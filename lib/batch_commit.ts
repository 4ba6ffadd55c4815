/**
 * One batch of events stored in one transaction (`Store.appendBatch`): the new rows of the event log, and the
 * session rows the batch moves on (lastSeq, lastEventAt, run state, snapshot) in the same transaction, so a row
 * never disagrees with its log. Apart from lib/store.ts because it is the write path's one hot loop; it reads
 * the store's cached rows and hands back the rows as they are after the commit, and the store alone puts them
 * in its cache.
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import type { AgentEvent } from "./protocol.ts";
import { type EncodedEvent, type Encoding, eventJson, payloadOf, storedForm } from "./event_codec.ts";
import { manyRowInsert, RowBuffer } from "./row_buffer.ts";
import type { SqliteSearch } from "./search/sqlite_index.ts";
import type { SessionRow } from "./store_file.ts";

/** What one committed batch changed for one session. */
export interface SessionCommit {
  sessionId: string;
  /** lastSeq before the batch: the `after` of the events frame browsers get. */
  after: number;
  lastSeq: number;
  /** The events actually inserted (replays of stored seqs are left out), encoded as browsers receive them. */
  inserted: EncodedEvent[];
  /** True when the session's snapshot or running state changed. */
  infoChanged: boolean;
}

/** What a batch is written with: the store's file, its statements and index, and its cached rows. */
export interface BatchTarget {
  db: DatabaseSync;
  /** The one-row insert of an event (`INSERT OR IGNORE`). */
  insertEvent: StatementSync;
  /** The same for `ROWS_PER_INSERT` rows (lib/row_buffer.ts). */
  insertEvents: StatementSync;
  /** The update of a whole session row, in the order info, lastSeq, lastEventAt, state, ask, id. */
  updateSession: StatementSync;
  search: SqliteSearch | null;
  /** A session's row as the store holds it now: read and copied here, never changed. */
  rowOf(id: string): SessionRow | undefined;
}

/**
 * The target of a store's batches, with the event inserts prepared on `db` once.
 * @param parts what the store holds: its row update, its index and the read of its cached rows.
 */
export function batchTarget(
  db: DatabaseSync,
  parts: Pick<BatchTarget, "updateSession" | "search" | "rowOf">,
): BatchTarget {
  return {
    db,
    insertEvent: db.prepare(
      "INSERT OR IGNORE INTO events(sessionId, seq, ts, type, payload) VALUES (?, ?, ?, ?, ?)",
    ),
    insertEvents: manyRowInsert(db),
    ...parts,
  };
}

/** A committed batch: what it changed per session, and the session rows as they are after it. */
export interface BatchCommitted {
  commits: SessionCommit[];
  rows: SessionRow[];
}

/**
 * Store `events` in one transaction. Replayed (sessionId, seq) pairs are ignored.
 * @throws {Error} for an event of a session the store does not know, or when SQLite fails; nothing of the
 * batch is then stored.
 */
export function commitBatch(
  events: AgentEvent[],
  target: BatchTarget,
  cuts?: readonly (Encoding | undefined)[],
): BatchCommitted {
  return commitOnce(events, target, { manyAtOnce: true, cuts });
}

function stateAfter(type: string, current: string): string {
  if (type === "agent_start") return "running";
  if (type === "agent_end" || type === "agent_settled" || type === "bye") return "idle";
  return current;
}

/**
 * @param options.manyAtOnce false: every row alone, decided by its own `changes` (the fallback below).
 * @param options.cuts the encodings at hand, by index in `events`.
 */
function commitOnce(
  events: AgentEvent[],
  target: BatchTarget,
  options: { manyAtOnce: boolean; cuts?: readonly (Encoding | undefined)[] },
): BatchCommitted {
  const { db, search } = target;
  const commits = new Map<string, { commit: SessionCommit; row: SessionRow }>();
  const rows = new RowBuffer(target.insertEvent, target.insertEvents);
  db.exec("BEGIN IMMEDIATE");
  try {
    for (let i = 0; i < events.length; i++) {
      const event = events[i];
      let entry = commits.get(event.sessionId);
      if (!entry) {
        const row = target.rowOf(event.sessionId);
        if (!row) throw new Error(`Cannot store event for unknown session "${event.sessionId}"`);
        entry = {
          commit: {
            sessionId: row.id,
            after: row.lastSeq,
            lastSeq: row.lastSeq,
            inserted: [],
            infoChanged: false,
          },
          row: { ...row },
        };
        commits.set(row.id, entry);
      }
      const { commit, row } = entry;
      const ts = Math.trunc(event.ts);
      const cut = options.cuts?.[i];
      const payload = cut?.payload ?? payloadOf(event);
      // Above the session's highest stored seq (and above every seq of it earlier in this batch) the row is
      // surely new: it waits to go in with others. At or below, it may be a replay: it goes alone, now, and
      // its `changes` say whether it was already there.
      if (options.manyAtOnce && event.seq > row.lastSeq) {
        rows.add(event.sessionId, event.seq, ts, event.type, payload);
      } else if (rows.insertOne(event.sessionId, event.seq, ts, event.type, payload) === 0) continue;
      const json = cut?.json ??
        eventJson({ sessionId: event.sessionId, seq: event.seq, ts, type: event.type, payload });
      commit.inserted.push({ seq: event.seq, json, event: storedForm(event, ts) });
      commit.lastSeq = row.lastSeq = Math.max(row.lastSeq, event.seq);
      row.lastEventAt = Math.max(row.lastEventAt ?? 0, ts);
      const state = stateAfter(event.type, row.state);
      if (state !== row.state || event.type === "session_info") commit.infoChanged = true;
      row.state = state;
      if (event.type === "session_info") {
        row.info = JSON.stringify(event.session);
        search?.setSession(row.id, event.session);
      }
    }
    if (!rows.flush()) {
      // A row counted as new was already in the file: the cache of highest seqs is wrong. Never seen; if
      // it happens, the batch goes again one row at a time, which decides each row by its own `changes`.
      db.exec("ROLLBACK");
      console.error("lvmh: a batch met rows it did not expect in the events table; stored row by row");
      return commitOnce(events, target, { manyAtOnce: false, cuts: options.cuts });
    }
    for (const { commit, row } of commits.values()) {
      if (commit.infoChanged) {
        target.updateSession.run(row.info, row.lastSeq, row.lastEventAt, row.state, row.ask, row.id);
      }
    }
    db.exec("COMMIT");
  } catch (error) {
    if (db.isTransaction) db.exec("ROLLBACK");
    throw error;
  }
  const committed = [...commits.values()];
  return { commits: committed.map((e) => e.commit), rows: committed.map((e) => e.row) };
}
