/**
 * Fan-out to browsers. The hub knows subscribers, not sockets: each frame is encoded once per publish,
 * every subscriber's backlog is bounded, and a subscriber that falls behind is dropped rather than
 * buffered without limit.
 */
import { CloseCode, type ServerFrame, type StoredEvent } from "./protocol.ts";
import type { EncodedEvent } from "./event_codec.ts";

/** Anything that can receive encoded frames: a browser socket in production, a recorder in tests. */
export interface Subscriber {
  send(data: string): void;
  /** Bytes queued but not yet written to the peer. */
  bufferedAmount(): number;
  close(code: number, reason: string): void;
  /**
   * An in-process follower (the notification watcher, the list's glances) gets a session's events as objects
   * instead of an `events` frame: it would only parse the frame back, and under ingest load that re-parsing
   * (and the garbage it makes) cost more than the rest of the publish. Objects are shared: never change them.
   */
  events?(sessionId: string, after: number, events: readonly PublishedEvent[]): void;
  /**
   * A browser socket: its conversation keeps a delta that comes before the stored events under it
   * (ui/conversation.ts), so it is sent a session's deltas at once (`publishAhead`), even while those events
   * wait for their commit. Everyone else gets every event in seq order.
   */
  takesDeltasAhead?: boolean;
}

/** An event as followers get it: seq, its encoded JSON, and the object when the publisher had one. */
export interface PublishedEvent extends EncodedEvent {
  /** The event as an object (envelope and payload, as `json` encodes it); absent when only text exists. */
  event?: Readonly<StoredEvent>;
  /** A delta `publishAhead` sent already: the subscribers that take deltas ahead do not get it again. */
  sentAhead?: boolean;
}

/** The object form of a published event: the publisher's own when it has one, else parsed from its JSON. */
export function eventObject(e: PublishedEvent): Readonly<StoredEvent> {
  return e.event ?? JSON.parse(e.json);
}

/** Default bound on one subscriber's unsent bytes; past it the subscriber is disconnected. */
export const MAX_BACKLOG_BYTES = 8 * 1024 * 1024;
/** How many sessions one browser may follow at once. */
export const MAX_SUBSCRIPTIONS = 16;

/** Events frames are cut at about this size, so the backlog bound is checked between them. */
export const MAX_EVENTS_FRAME_BYTES = 512 * 1024;

/** Encode an `events` frame from already-encoded events, without re-parsing them. */
export function eventsFrame(sessionId: string, after: number, eventsJson: string[]): string {
  return `{"type":"events","sessionId":${JSON.stringify(sessionId)},"after":${after},"events":[${
    eventsJson.join(",")
  }]}`;
}

/** Subscribers, what each follows, and the rules for writing to them. */
export class Hub {
  #all = new Set<Subscriber>();
  #bySession = new Map<string, Set<Subscriber>>();
  #sessionsOf = new Map<Subscriber, Set<string>>();
  #maxBacklog: number;

  constructor(options: { maxBacklogBytes?: number } = {}) {
    this.#maxBacklog = options.maxBacklogBytes ?? MAX_BACKLOG_BYTES;
  }

  /** Number of connected subscribers. */
  get size(): number {
    return this.#all.size;
  }

  /** Add a subscriber; it receives broadcasts unless `options.broadcasts` is false. */
  join(sub: Subscriber, options: { broadcasts?: boolean } = {}): void {
    // An internal follower of one session (a notification watcher) has no use for every list change: with
    // thousands of sessions, handing each broadcast to each of them would make every broadcast O(sessions).
    if (options.broadcasts !== false) this.#all.add(sub);
    this.#sessionsOf.set(sub, new Set());
  }

  /** Remove a subscriber and all its subscriptions; safe to call twice. */
  leave(sub: Subscriber): void {
    this.#all.delete(sub);
    for (const id of this.#sessionsOf.get(sub) ?? []) this.#unlink(sub, id);
    this.#sessionsOf.delete(sub);
  }

  /**
   * Follow one session's events.
   * @throws {RangeError} when the subscriber already follows `MAX_SUBSCRIPTIONS` sessions.
   */
  subscribe(sub: Subscriber, sessionId: string): void {
    const mine = this.#sessionsOf.get(sub);
    if (!mine) return;
    if (!mine.has(sessionId) && mine.size >= MAX_SUBSCRIPTIONS) {
      throw new RangeError(`Cannot follow more than ${MAX_SUBSCRIPTIONS} sessions at once`);
    }
    mine.add(sessionId);
    let set = this.#bySession.get(sessionId);
    if (!set) this.#bySession.set(sessionId, set = new Set());
    set.add(sub);
  }

  /** Stop following a session; no error when not following it. */
  unsubscribe(sub: Subscriber, sessionId: string): void {
    this.#sessionsOf.get(sub)?.delete(sessionId);
    this.#unlink(sub, sessionId);
  }

  /**
   * Send already-encoded events of one session (seq ascending) to its followers, in frames of bounded size;
   * in-process followers get the events themselves. Frames are built only when a socket follows.
   */
  publishEvents(sessionId: string, after: number, events: PublishedEvent[]): void {
    const set = this.#bySession.get(sessionId);
    if (!set?.size || events.length === 0) return;
    let sockets: Subscriber[] | null = null;
    for (const sub of set) {
      if (!sub.events) (sockets ??= []).push(sub);
      else {
        try {
          sub.events(sessionId, after, events);
        } catch (error) {
          console.error(`lvmh: a follower of ${sessionId} failed: ${(error as Error).message}`);
        }
      }
    }
    if (!sockets) return;
    const ahead = events.some((e) => e.sentAhead) ? sockets.filter((s) => s.takesDeltasAhead) : [];
    if (ahead.length === 0) return this.#publishFrames(sockets, sessionId, after, events);
    this.#publishFrames(sockets.filter((s) => !s.takesDeltasAhead), sessionId, after, events);
    this.#publishFrames(ahead, sessionId, after, events.filter((e) => !e.sentAhead));
  }

  /**
   * Send deltas of a session at once to the followers that take them ahead of the session's stored events
   * (browser sockets), while the events before them wait for their commit; everyone gets them again, in seq
   * order and marked `sentAhead`, in the `publishEvents` after it. A browser that subscribes in between misses
   * them, as it misses any delta sent before it came: deltas are a preview, the `message_end` has the text.
   */
  publishAhead(sessionId: string, after: number, deltas: PublishedEvent[]): void {
    const set = this.#bySession.get(sessionId);
    if (!set?.size) return;
    const ahead = [...set].filter((s) => s.takesDeltasAhead);
    if (ahead.length) this.#publishFrames(ahead, sessionId, after, deltas);
  }

  #publishFrames(set: Subscriber[], sessionId: string, after: number, events: PublishedEvent[]): void {
    if (set.length === 0) return;
    let start = 0;
    while (start < events.length) {
      let end = start;
      let bytes = 0;
      while (
        end < events.length && (end === start || bytes + events[end].json.length <= MAX_EVENTS_FRAME_BYTES)
      ) {
        bytes += events[end++].json.length;
      }
      const from = start === 0 ? after : events[start - 1].seq;
      this.#write(set, eventsFrame(sessionId, from, events.slice(start, end).map((e) => e.json)));
      start = end;
    }
  }

  /** Send one frame to every subscriber. */
  broadcast(frame: ServerFrame): void {
    if (this.#all.size) this.#write(this.#all, JSON.stringify(frame));
  }

  /** Send one frame to one subscriber, with the same backlog rule. */
  sendTo(sub: Subscriber, data: string): void {
    this.#write([sub], data);
  }

  /** Disconnect every subscriber (shutdown). */
  closeAll(code: number, reason: string): void {
    for (const sub of [...this.#sessionsOf.keys()]) {
      this.leave(sub);
      try {
        sub.close(code, reason);
      } catch { /* already closing */ }
    }
  }

  #write(targets: Iterable<Subscriber>, data: string): void {
    for (const sub of [...targets]) {
      if (sub.bufferedAmount() > this.#maxBacklog) {
        this.leave(sub);
        try {
          sub.close(CloseCode.slowConsumer, "slow consumer: backlog limit exceeded");
        } catch { /* already closing */ }
        continue;
      }
      try {
        sub.send(data);
      } catch {
        this.leave(sub);
      }
    }
  }

  #unlink(sub: Subscriber, sessionId: string): void {
    const set = this.#bySession.get(sessionId);
    if (!set) return;
    set.delete(sub);
    if (set.size === 0) this.#bySession.delete(sessionId);
  }
}
