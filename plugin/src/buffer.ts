/**
 * The unacknowledged events of one session, oldest first: bounded by count and by characters, split into
 * "written to the current socket" and "still to send". Pure data structure, no I/O, so it is unit-tested.
 */
import { MAX_BUFFER, MAX_BUFFER_CHARS } from "./constants.ts";

/** One event frame as sent: the envelope and its payload. */
export interface EventFrame {
  v: number;
  sessionId: string;
  seq: number;
  ts: number;
  type: string;
  [field: string]: unknown;
}

/** What was lost to the bounds since the last report (sent as `buffer_overflow`). */
export interface Overflow {
  dropped: number;
  firstDroppedSeq: number;
  lastDroppedSeq: number;
}

interface Entry {
  ev: EventFrame;
  /** Roughly how many characters the payload holds. */
  size: number;
}

/** A FIFO of event frames with a send cursor, bounded by `maxCount` and `maxChars`. */
export class EventBuffer {
  #buf: (Entry | undefined)[] = [];
  #head = 0;
  #sendAt = 0;
  #chars = 0;
  #overflow: Overflow | null = null;
  #maxCount: number;
  #maxChars: number;

  constructor(options: { maxCount?: number; maxChars?: number } = {}) {
    this.#maxCount = options.maxCount ?? MAX_BUFFER;
    this.#maxChars = options.maxChars ?? MAX_BUFFER_CHARS;
  }

  /** Events held (sent or not). */
  get length(): number {
    return this.#buf.length - this.#head;
  }

  /** Characters held, as the sizes given to `push` say. */
  get chars(): number {
    return this.#chars;
  }

  /** The oldest event held, if any. */
  get first(): EventFrame | undefined {
    return this.#buf[this.#head]?.ev;
  }

  /** Events not yet written to the current socket. */
  get unsent(): number {
    return this.#buf.length - this.#sendAt;
  }

  /** Whether an event with this seq is held (seqs ascend, so a binary search). */
  has(seq: number): boolean {
    let lo = this.#head, hi = this.#buf.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const s = this.#buf[mid]!.ev.seq;
      if (s === seq) return true;
      if (s < seq) lo = mid + 1;
      else hi = mid - 1;
    }
    return false;
  }

  /**
   * Append `ev`; past the bounds the oldest are dropped (and counted as lost when they were never sent).
   * @param exempt true for the overflow notice itself: dropping for it would start a new overflow
   */
  push(ev: EventFrame, size: number, exempt = false): void {
    this.#buf.push({ ev, size });
    this.#chars += size;
    while (
      !exempt && this.#head < this.#buf.length - 1 &&
      (this.#buf.length - this.#head > this.#maxCount ||
        this.#chars > this.#maxChars)
    ) this.#dropOldest();
  }

  /** The next event to write, without taking it. */
  peekUnsent(): EventFrame | undefined {
    return this.#buf[this.#sendAt]?.ev;
  }

  /** The `i`-th unsent event (0 = next), without taking it. */
  unsentAt(i: number): EventFrame | undefined {
    return this.#buf[this.#sendAt + i]?.ev;
  }

  /** Mark the next `n` events as written to the socket. */
  markSent(n = 1): void {
    this.#sendAt = Math.min(this.#buf.length, this.#sendAt + n);
  }

  /** Forget everything up to `lastSeq` (the daemon stored it). */
  trim(lastSeq: number): void {
    while (
      this.#head < this.#buf.length && this.#buf[this.#head]!.ev.seq <= lastSeq
    ) this.#advance();
    this.#compact();
  }

  /**
   * After a welcome: forget what the daemon has, drop live-only deltas, and send everything else again.
   */
  rewind(lastSeq: number): void {
    this.trim(lastSeq);
    const kept = this.#buf.slice(this.#head).filter((e) => e!.ev.type !== "message_update") as Entry[];
    this.#buf = kept;
    this.#chars = kept.reduce((n, e) => n + e.size, 0);
    this.#head = this.#sendAt = 0;
  }

  /** Add `shift` to every held seq and to the pending overflow report (the daemon was ahead of us). */
  renumber(shift: number): void {
    for (let i = this.#head; i < this.#buf.length; i++) {
      this.#buf[i]!.ev.seq += shift;
    }
    if (this.#overflow) {
      this.#overflow.firstDroppedSeq += shift;
      this.#overflow.lastDroppedSeq += shift;
    }
  }

  /** The loss to report, cleared. */
  takeOverflow(): Overflow | null {
    const o = this.#overflow;
    this.#overflow = null;
    return o;
  }

  /** Forget everything. */
  clear(): void {
    this.#buf = [];
    this.#head = this.#sendAt = this.#chars = 0;
  }

  #advance() {
    this.#chars -= this.#buf[this.#head]!.size;
    this.#buf[this.#head++] = undefined;
    if (this.#sendAt < this.#head) this.#sendAt = this.#head;
  }

  #compact() {
    if (this.#head > 4096 && this.#head * 2 > this.#buf.length) {
      this.#buf = this.#buf.slice(this.#head);
      this.#sendAt -= this.#head;
      this.#head = 0;
    }
  }

  #dropOldest() {
    const ev = this.#buf[this.#head]!.ev;
    // Events already written to a live socket most likely reached the daemon; only unsent ones are lost.
    if (this.#head >= this.#sendAt && ev.type !== "message_update") {
      this.#overflow ??= {
        dropped: 0,
        firstDroppedSeq: ev.seq,
        lastDroppedSeq: ev.seq,
      };
      this.#overflow.dropped++;
      this.#overflow.lastDroppedSeq = ev.seq;
    }
    this.#advance();
    this.#compact();
  }
}
