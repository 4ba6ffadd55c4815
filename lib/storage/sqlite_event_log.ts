/**
 * The event log over the daemon's SQLite `Store`, unchanged: the async interface of lib/storage/event_log.ts on
 * the synchronous store. A SQLite file has one daemon, so holder epochs live in this process's memory; they
 * still fence a writer of this process (an older socket of a session that reconnected).
 */
import type { AgentEvent, SessionInfo } from "../protocol.ts";
import type { Store } from "../store.ts";
import { sessionNotFound } from "../errors.ts";
import {
  type AppendOptions,
  checkEvent,
  type EventLog,
  type EventRow,
  type EventsPage,
  FencedError,
  type LoggedSession,
  type SessionCommit,
} from "./event_log.ts";
import { settle } from "./sqlite_sync.ts";

/** The event log of a `Store` (which stays its owner: `close()` does not close it). */
export class SqliteEventLog implements EventLog {
  readonly kind = "sqlite";
  #store: Store;
  #epochs = new Map<string, number>();

  constructor(store: Store) {
    this.#store = store;
  }

  ensureSession(info: SessionInfo): Promise<void> {
    return settle(() => this.#store.upsertSession(info, { keepSnapshot: true }));
  }

  claimHolder(sessionId: string, _replicaId: string): Promise<number> {
    return settle(() => {
      if (!this.#store.getSession(sessionId)) throw sessionNotFound(sessionId);
      const epoch = (this.#epochs.get(sessionId) ?? 0) + 1;
      this.#epochs.set(sessionId, epoch);
      return epoch;
    });
  }

  append(sessionId: string, events: readonly AgentEvent[], options: AppendOptions): Promise<SessionCommit> {
    // Synchronous from the fence check to the commit: no other append of this process can come in between,
    // which is what the counter row's lock gives the Postgres log.
    return settle(() => {
      if (!this.#store.getSession(sessionId)) throw sessionNotFound(sessionId);
      const current = this.#epochs.get(sessionId) ?? 0;
      if (options.epoch !== current) throw new FencedError(sessionId, options.epoch, current);
      let counter = this.#store.lastSeq(sessionId);
      const numbered = events.map((event) => {
        checkEvent(sessionId, event);
        if (event.seq === 0) return { ...event, seq: ++counter } as AgentEvent;
        counter = Math.max(counter, event.seq);
        return event;
      });
      const last = this.#store.lastSeq(sessionId);
      const commit = numbered.length ? this.#store.appendBatch(numbered)[0] : undefined;
      return commit ?? { sessionId, after: last, lastSeq: last, inserted: [], infoChanged: false };
    });
  }

  events(sessionId: string, page: EventsPage): Promise<EventRow[]> {
    return settle(() => this.#store.eventRows(sessionId, page));
  }

  lastSeq(sessionId: string): Promise<number> {
    return settle(() => this.#store.lastSeq(sessionId));
  }

  sessions(): Promise<LoggedSession[]> {
    return settle(() =>
      this.#store.listSessions().map((s) => ({ id: s.id, lastSeq: s.lastSeq, lastEventAt: s.lastEventAt }))
    );
  }

  deleteSession(sessionId: string): Promise<boolean> {
    return settle(() => {
      const deleted = this.#store.deleteSession(sessionId);
      if (deleted) this.#epochs.delete(sessionId);
      return deleted;
    });
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
