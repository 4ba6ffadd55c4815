/**
 * One session's event stream over SSE (`GET /api/sessions/:id/stream`): persisted events from SQLite after
 * the resume point, a few at a time as the reader takes them, then live from the hub with no gap and no
 * duplicate at the seam. Persisted events carry `id: <seq>`; live `message_update` deltas carry no id, since
 * they are never stored and cannot be resumed.
 */
import type { App } from "./app.ts";
import type { Subscriber } from "./hub.ts";
import { type AgentEventType, CloseCode, isEphemeral, type StoredEvent } from "./protocol.ts";
import { eventJson } from "./event_codec.ts";
import { HIGH_WATER_BYTES, sseEvent, SseStream } from "./sse.ts";

/** The latest page: what a stream without a resume point shows first. */
export const STREAM_PAGE = 1000;
/**
 * Catch-up reads at most this many events at a time. A pull writes only what fits the queue's room, so what
 * a stalled reader costs during its catch-up is the high-water mark plus one event, not a page of large events.
 * It also reads about only what fits: the rows it reads and does not write are garbage, and reading 100 events
 * of 60 KB to write one made 6 MB of it per pull (a reader catching up on large events took the daemon's RSS
 * from ~10 to 84 MiB on a loaded machine, where collections come late).
 */
export const CATCHUP_READ = 100;

/** Options of `openSessionStream`, for tests. */
export interface SessionStreamOptions {
  heartbeatMs?: number;
}

/**
 * Open a session's stream. The caller has checked that the session exists.
 * @param after resume after this seq (0: from the start); null: the latest page only.
 */
export function openSessionStream(
  app: App,
  sessionId: string,
  after: number | null,
  options: SessionStreamOptions = {},
): SseStream {
  let cursor = after ?? latestPageStart(app, sessionId);
  let live = false;
  /** The size of a catch-up event so far (a moving average), to read about only what fits. */
  let eventBytes = 256;
  const sub: Subscriber = {
    send: (data) => onFrame(data),
    bufferedAmount: () => stream.bufferedAmount(),
    // The hub closes a subscriber past its backlog bound: drop the queue then, not only stop adding to it.
    close: (code, reason) => code === CloseCode.slowConsumer ? stream.abort(reason) : stream.close(),
  };

  function onFrame(data: string): void {
    if (data.startsWith('{"type":"events"')) return onEvents(JSON.parse(data).events as StoredEvent[]);
    // Any change of the session list may be this session's deletion: then the stream has nothing more.
    if (data.startsWith('{"type":"session_') && !app.store.getSession(sessionId)) {
      stream.write(sseEvent({ event: "session_deleted", data: JSON.stringify({ sessionId }) }));
      stream.close();
    }
  }

  function onEvents(events: StoredEvent[]): void {
    for (const event of events) {
      // At the seam the hub may hand over what the catch-up already sent; the seq tells.
      if (event.seq <= cursor) continue;
      if (isEphemeral(event.type as AgentEventType)) {
        stream.write(sseEvent({ event: event.type, data: JSON.stringify(event) }));
      } else {
        stream.write(sseEvent({ id: event.seq, event: event.type, data: JSON.stringify(event) }));
        cursor = event.seq;
      }
    }
  }

  const stream = new SseStream({
    pull(s) {
      if (live) return;
      // One chunk per pull, about as large as the room left (at least one event): few writes for small
      // events, and never more than the high-water mark plus one event queued for a reader that stalls.
      const room = HIGH_WATER_BYTES - s.bufferedAmount();
      let text = "";
      while (true) {
        // As many rows as the room left holds at the size of the events read so far (one at least).
        const limit = Math.min(CATCHUP_READ, Math.max(1, Math.ceil((room - text.length) / eventBytes)));
        const rows = app.store.eventRows(sessionId, { after: cursor, limit });
        for (const row of rows) {
          if (text !== "" && text.length >= room) return s.write(text); // the rest on the next pull
          const event = sseEvent({ id: row.seq, event: row.type, data: eventJson(row) });
          eventBytes = 0.8 * eventBytes + 0.2 * event.length;
          text += event;
          cursor = row.seq;
        }
        if (rows.length < limit) break;
      }
      if (text) s.write(text);
      // Caught up: subscribe in this same synchronous turn as the last read, so no commit slips between.
      app.hub.subscribe(sub, sessionId);
      live = true;
    },
    end: () => app.hub.leave(sub),
  }, options);
  // Joined at once (broadcasts only) so shutdown closes a stream still catching up, and a deletion ends it.
  app.hub.join(sub);
  return stream;
}

/** The seq just before the latest page of a session, so reading "after" it yields that page. */
function latestPageStart(app: App, sessionId: string): number {
  const page = app.store.eventRows(sessionId, {
    after: 0,
    before: Number.MAX_SAFE_INTEGER,
    limit: STREAM_PAGE,
  });
  return page.length ? page[0].seq - 1 : app.store.lastSeq(sessionId);
}
