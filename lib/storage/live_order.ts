/**
 * On a replica that follows a session (it does not hold it), live deltas from the live channel
 * (lib/storage/live_channel.ts) and stored events from the event feed arrive by different roads, so a delta
 * can come before the stored events it follows. `LiveOrder` holds each delta until the replica's local cursor
 * for its session has reached the delta's `after`, and hands deltas over in arrival order.
 *
 * With `c` the session's cursor (the highest seq this replica stored and released to its browsers) when a
 * delta `d` is looked at (on `offer`, on `advanced`, on each expiry pass):
 * - `d.after === c`: released, unless a delta of the session that arrived earlier is still held (then it
 *   waits behind it: arrival order);
 * - `d.after > c`: held, the stored events it follows are not here yet;
 * - `d.after < c`: dropped as stale: a stored event newer than `d.after` (the `message_end` of the message it
 *   was streaming, most often) was already released, so it would show text after the message moved on, and
 *   what it carried is in that stored event.
 * A held delta is dropped once it was held `maxAgeMs` (the feed is that late: the stored events will bring the
 * text), the oldest of a session past `perSession` held, and the oldest of all past `total` held.
 * Deltas of one holder arrive with `after` never decreasing; should an older holder's delta arrive behind a
 * newer one's, it waits behind it and is dropped as stale once the cursor passes it.
 */
import type { LiveDelta } from "./live_channel.ts";

/** How long a delta may wait for the stored events it follows. */
export const LIVE_HOLD_MS = 2_000;
/** The most deltas held per session (about a second of a fast stream). */
export const LIVE_HOLD_PER_SESSION = 256;
/** The most deltas held in all. */
export const LIVE_HOLD_TOTAL = 8_192;

export interface LiveOrderOptions {
  /** Longest hold (ms), default `LIVE_HOLD_MS`. */
  maxAgeMs?: number;
  /** Most deltas held per session, default `LIVE_HOLD_PER_SESSION`. */
  perSession?: number;
  /** Most deltas held in all, default `LIVE_HOLD_TOTAL`. */
  total?: number;
  /** The clock (ms), default `performance.now`. */
  now?: () => number;
  /** Period of the expiry pass while anything is held (ms), default a quarter of `maxAgeMs`; 0: none. */
  expireEveryMs?: number;
}

/** What became of the deltas offered so far. */
export interface LiveOrderCounts {
  released: number;
  /** `after` below the cursor: a newer stored event was released first. */
  stale: number;
  /** Held longer than `maxAgeMs`. */
  expired: number;
  /** Pushed out by the per-session or total bound. */
  overflow: number;
}

interface Held {
  delta: LiveDelta;
  /** When it was offered (the clock's ms). */
  at: number;
  /** Arrival number, across sessions: the oldest of all is the lowest. */
  n: number;
}

/** Orders one replica's incoming live deltas behind its stored events (see the module's comment). */
export class LiveOrder {
  #release: (sessionId: string, json: string, after: number) => void;
  #cursor: (sessionId: string) => number;
  #maxAgeMs: number;
  #perSession: number;
  #total: number;
  #now: () => number;
  #expireEveryMs: number;
  #timer: ReturnType<typeof setInterval> | undefined;
  /** Held deltas per session, in arrival order; a session with none has no entry. */
  #held = new Map<string, Held[]>();
  #size = 0;
  #arrivals = 0;
  #closed = false;
  #counts: LiveOrderCounts = { released: 0, stale: 0, expired: 0, overflow: 0 };

  /**
   * @param release hands a delta to the replica's browsers (its hub); one that throws is logged.
   * @param cursor the highest seq of a session this replica has stored and released (lower than any `after`
   *   for a session it does not know yet).
   */
  constructor(
    release: (sessionId: string, json: string, after: number) => void,
    cursor: (sessionId: string) => number,
    options: LiveOrderOptions = {},
  ) {
    this.#release = release;
    this.#cursor = cursor;
    this.#maxAgeMs = options.maxAgeMs ?? LIVE_HOLD_MS;
    this.#perSession = options.perSession ?? LIVE_HOLD_PER_SESSION;
    this.#total = options.total ?? LIVE_HOLD_TOTAL;
    this.#now = options.now ?? (() => performance.now());
    this.#expireEveryMs = options.expireEveryMs ?? this.#maxAgeMs / 4;
  }

  /** Deltas held now. */
  get held(): number {
    return this.#size;
  }

  /** What became of the deltas offered so far (a copy). */
  get counts(): LiveOrderCounts {
    return { ...this.#counts };
  }

  /** A delta from the live channel: released now, held, or dropped as stale. */
  offer(delta: LiveDelta): void {
    if (this.#closed) return;
    const queue = this.#held.get(delta.sessionId);
    if (queue) this.#drain(delta.sessionId, queue);
    const cursor = this.#cursor(delta.sessionId);
    if (delta.after < cursor) {
      this.#counts.stale++;
      return;
    }
    const waiting = this.#held.get(delta.sessionId);
    if (!waiting && delta.after === cursor) return this.#hand(delta);
    const entry = { delta, at: this.#now(), n: this.#arrivals++ };
    if (waiting) waiting.push(entry);
    else this.#held.set(delta.sessionId, [entry]);
    this.#size++;
    if ((waiting?.length ?? 1) > this.#perSession) this.#dropHead(delta.sessionId, waiting!);
    if (this.#size > this.#total) this.#dropOldest();
    if (this.#expireEveryMs > 0) this.#timer ??= setInterval(() => this.expire(), this.#expireEveryMs);
  }

  /** The replica stored (and released) events of `sessionId`: hand over what now follows them. */
  advanced(sessionId: string): void {
    const queue = this.#held.get(sessionId);
    if (queue) this.#drain(sessionId, queue);
  }

  /**
   * The replica is about to publish stored events `after < seq ≤ lastSeq` of the session in one batch: hand
   * back (and forget) the held deltas that belong among them (`after ≤ d.after < lastSeq`), in arrival order,
   * for the caller to merge by seq; those that follow no event of the batch or before it are stale.
   */
  within(sessionId: string, after: number, lastSeq: number): LiveDelta[] {
    const queue = this.#held.get(sessionId);
    if (!queue) return [];
    const taken: LiveDelta[] = [];
    const kept = queue.filter(({ delta }) => {
      if (delta.after >= lastSeq) return true;
      if (delta.after >= after) taken.push(delta);
      else this.#counts.stale++;
      return false;
    });
    this.#size -= queue.length - kept.length;
    this.#counts.released += taken.length;
    if (kept.length) this.#held.set(sessionId, kept);
    else this.#held.delete(sessionId);
    this.#idle();
    return taken;
  }

  /** Drop every held delta older than `maxAgeMs` (the timer calls it; so may a test with its own clock). */
  expire(): void {
    const oldest = this.#now() - this.#maxAgeMs;
    for (const [sessionId, queue] of this.#held) {
      let k = 0;
      while (k < queue.length && queue[k].at <= oldest) k++;
      if (k === 0) continue;
      queue.splice(0, k);
      this.#size -= k;
      this.#counts.expired += k;
      if (queue.length) this.#drain(sessionId, queue);
      else this.#held.delete(sessionId);
    }
    this.#idle();
  }

  /** Forget what is held and stop the timer; offers are ignored from now on. */
  close(): void {
    this.#closed = true;
    this.#held.clear();
    this.#size = 0;
    this.#idle();
  }

  /** Release the heads that follow the cursor, drop the stale ones, stop at the first that must wait. */
  #drain(sessionId: string, queue: Held[]): void {
    const cursor = this.#cursor(sessionId);
    let k = 0;
    const ready: LiveDelta[] = [];
    for (; k < queue.length && queue[k].delta.after <= cursor; k++) {
      if (queue[k].delta.after < cursor) this.#counts.stale++;
      else ready.push(queue[k].delta);
    }
    if (k === 0) return;
    if (k === queue.length) this.#held.delete(sessionId);
    else queue.splice(0, k);
    this.#size -= k;
    this.#idle();
    for (const delta of ready) this.#hand(delta);
  }

  #hand(delta: LiveDelta): void {
    this.#counts.released++;
    try {
      this.#release(delta.sessionId, delta.json, delta.after);
    } catch (error) {
      console.error(
        `lvmh: releasing a live delta of ${delta.sessionId} failed: ${(error as Error)?.message}`,
      );
    }
  }

  #dropHead(sessionId: string, queue: Held[]): void {
    queue.shift();
    this.#size--;
    this.#counts.overflow++;
    if (!queue.length) this.#held.delete(sessionId);
  }

  /** Drop the oldest held delta of all (a scan of the sessions' heads: only under overload). */
  #dropOldest(): void {
    let oldest: [string, Held[]] | null = null;
    for (const entry of this.#held) {
      if (!oldest || entry[1][0].n < oldest[1][0].n) oldest = entry;
    }
    if (oldest) this.#dropHead(oldest[0], oldest[1]);
  }

  /** Nothing held: no expiry pass. */
  #idle(): void {
    if (this.#size > 0 || this.#timer === undefined) return;
    clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
