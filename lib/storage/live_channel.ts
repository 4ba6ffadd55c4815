/**
 * Live deltas across replicas: the ephemeral events (`message_update`, lib/protocol.ts `isEphemeral`) that the
 * holder of a session never stores, carried to the other replicas so their browsers see text stream in too.
 * The event feed (lib/storage/event_feed.ts) carries only stored events; this channel carries the rest.
 *
 * Lossy by design, like the PUB/SUB that carries a realtime server's ephemeral publications: nothing is
 * stored, nothing is retried, and a subscriber that was not listening when a delta went out never gets it. A
 * lost delta costs a stretch of streamed text on one replica's browsers until the stored `message_end` that
 * follows arrives through the feed with the whole message. The other way round, a delta must not reach a
 * browser before the stored events it follows: a following replica orders deltas against its local cursor
 * with `LiveOrder` (lib/storage/live_order.ts), using each delta's `after`.
 *
 * Implementations: PostgreSQL NOTIFY (lib/storage/pg_live_channel.ts); and for SQLite, which has one daemon
 * and so nobody to tell, the null object `NullLiveChannel` below (the holder publishes its deltas to its own
 * hub directly, so even subscribers of that object hear nothing).
 */

/** One ephemeral event of a session, as its holder published it. */
export interface LiveDelta {
  sessionId: string;
  /** The holder's committed lastSeq of the session when the delta was published: the stored events it follows. */
  after: number;
  /** The event exactly as browsers receive it (lib/event_codec.ts `encodedEvent(...).json`). */
  json: string;
}

/** The channel between replicas for live deltas. */
export interface LiveChannel {
  /** Which database carries it. */
  readonly kind: "sqlite" | "postgres";
  /**
   * Send a delta to every other replica's subscribers (never back to this object's own). Never throws and
   * never waits: a delta that cannot go (too large, the database away, the queue full) is dropped and counted.
   * Deltas of one channel object arrive in publish order, those of one statement or payload all or none.
   */
  publish(delta: LiveDelta): void;
  /**
   * Hear the deltas other replicas publish from now on (in their publish order per publisher); a handler
   * that throws does not keep the others from hearing.
   * @returns a function that stops this subscriber.
   */
  subscribe(fn: (delta: LiveDelta) => void): () => void;
  /** Deltas this object dropped instead of sending (too large, queued too long behind others, a failed send). */
  readonly dropped: number;
  /** Stop listening and sending; the channel is unusable afterwards. */
  close(): Promise<void>;
}

/** The channel of a single daemon (SQLite): there is no other replica, so it carries nothing anywhere. */
export class NullLiveChannel implements LiveChannel {
  readonly kind = "sqlite";
  readonly dropped = 0;

  publish(_delta: LiveDelta): void {}

  subscribe(_fn: (delta: LiveDelta) => void): () => void {
    return () => {};
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** Hands each delta to every subscriber; one that throws does not keep the others from hearing. */
export class LiveSubscribers {
  #fns = new Set<(delta: LiveDelta) => void>();

  get size(): number {
    return this.#fns.size;
  }

  add(fn: (delta: LiveDelta) => void): () => void {
    // A wrapper per call, so the same function subscribed twice is two subscribers, each stopped on its own.
    const entry = (delta: LiveDelta) => fn(delta);
    this.#fns.add(entry);
    return () => void this.#fns.delete(entry);
  }

  deliver(delta: LiveDelta): void {
    for (const fn of this.#fns) {
      try {
        fn(delta);
      } catch (error) {
        console.error(`lvmh: a live delta subscriber failed: ${(error as Error)?.message}`);
      }
    }
  }

  clear(): void {
    this.#fns.clear();
  }
}
