/**
 * A batch of events planned on the event loop so that only its SQL runs on the writer thread
 * (lib/event_writer.ts). Only a batch whose every row is surely new can be planned: each event above its
 * session's stored lastSeq and above the one before it, of a known session, and no snapshot (`session_info`,
 * which the search index takes in the same transaction). Then what the commit changes is known before SQLite
 * is asked, and SQLite only has to confirm it. Anything else (a replay after a reconnect, a new snapshot) is
 * stored on the loop by lib/batch_commit.ts, which decides each doubtful row by its own `changes`.
 */
import type { AgentEvent } from "./protocol.ts";
import { eventJson, payloadOf, storedForm } from "./event_codec.ts";
import { type SessionCommit, stateAfter } from "./batch_commit.ts";
import type { SessionRow } from "./store_file.ts";

/** What a planned batch moves on in a session's row (the rest of the row is not the batch's business). */
export interface RowMove {
  id: string;
  lastSeq: number;
  lastEventAt: number | null;
  state: string;
}

/** The SQL of a planned batch, as the writer thread gets it (plain arrays: cheap to copy to a thread). */
export interface BatchSql {
  /** Five values per row: sessionId, seq, ts, type, payload. */
  rows: (string | number)[];
  /** Four values per session whose running state changed: lastSeq, lastEventAt, state, id. */
  states: (string | number | null)[];
}

export interface PlannedBatch {
  /** What the batch changes per session, as `commitBatch` would say it. */
  commits: SessionCommit[];
  moves: RowMove[];
  sql: BatchSql;
}

/**
 * Plan `events` against the sessions' rows as stored now.
 * @returns null when a row of the batch may not be new, or a session is unknown: the batch is then stored on
 * the loop.
 */
export function planBatch(
  events: readonly AgentEvent[],
  rowOf: (id: string) => SessionRow | undefined,
): PlannedBatch | null {
  const planned = new Map<string, { commit: SessionCommit; move: RowMove }>();
  const rows: (string | number)[] = [];
  for (const event of events) {
    if (event.type === "session_info") return null;
    let entry = planned.get(event.sessionId);
    if (!entry) {
      const row = rowOf(event.sessionId);
      if (!row) return null;
      entry = {
        commit: {
          sessionId: row.id,
          after: row.lastSeq,
          lastSeq: row.lastSeq,
          inserted: [],
          infoChanged: false,
        },
        move: { id: row.id, lastSeq: row.lastSeq, lastEventAt: row.lastEventAt, state: row.state },
      };
      planned.set(row.id, entry);
    }
    const { commit, move } = entry;
    if (event.seq <= move.lastSeq) return null;
    const ts = Math.trunc(event.ts);
    const payload = payloadOf(event);
    rows.push(event.sessionId, event.seq, ts, event.type, payload);
    const json = eventJson({ sessionId: event.sessionId, seq: event.seq, ts, type: event.type, payload });
    commit.inserted.push({ seq: event.seq, json, event: storedForm(event, ts) });
    commit.lastSeq = move.lastSeq = event.seq;
    move.lastEventAt = Math.max(move.lastEventAt ?? 0, ts);
    const state = stateAfter(event.type, move.state);
    if (state !== move.state) commit.infoChanged = true;
    move.state = state;
  }
  const states: (string | number | null)[] = [];
  for (const { commit, move } of planned.values()) {
    if (commit.infoChanged) states.push(move.lastSeq, move.lastEventAt, move.state, move.id);
  }
  const entries = [...planned.values()];
  return { commits: entries.map((e) => e.commit), moves: entries.map((e) => e.move), sql: { rows, states } };
}
