/**
 * One session's outgoing events: the seq each gets (continued from the seq file, renumbered once when the
 * daemon already holds some), the bounded buffer of those not yet acknowledged, and the flush that writes
 * them to a welcomed socket, a bounded amount per turn so a long replay still yields to pi. Apart from the
 * link so that the numbering and the order of what is sent have one owner; it never dials or reads a frame.
 */
import { CloseCode, PROTOCOL_VERSION } from "../../lib/wire.ts";
import { EventBuffer, type EventFrame, type Overflow } from "./buffer.ts";
import { BATCH_MAX_EVENTS, HIGH_WATER_BYTES, SEND_BATCH } from "./constants.ts";
import type { DaemonSocket } from "./daemon_socket.ts";
import { encode, encodeBatch } from "./encode.ts";
import type { AgentEventType, EventPayload } from "./frames.ts";
import type { Logger } from "./log.ts";
import { SeqFile } from "./seq_file.ts";
import { later, unref } from "./timers.ts";

/** One session's seq counter, event buffer and flush. */
export class Outbox {
  #sessionId: string;
  #log: Logger;
  #socket: DaemonSocket;
  #batching: () => boolean;
  #seq: SeqFile;
  #buf = new EventBuffer();
  #nextSeq: number;
  #baseSeq: number;
  #everWelcomed = false;
  #flushQueued = false;

  /**
   * @param options.socket the session's socket: events go out while it is ready
   * @param options.batching true when the daemon takes many events to a `batch` frame
   */
  constructor(
    stateDir: string,
    sessionId: string,
    options: { log: Logger; socket: DaemonSocket; batching: () => boolean },
  ) {
    const { log, socket } = options;
    this.#sessionId = sessionId;
    this.#log = log;
    this.#socket = socket;
    this.#batching = options.batching;
    this.#seq = new SeqFile(
      stateDir,
      sessionId,
      () => this.#nextSeq - 1,
      (msg, err) => {
        if (err) log(`session ${sessionId}: ${msg}`, err);
        else socket.noteError(msg);
      },
    );
    this.#nextSeq = this.#baseSeq = this.#seq.read() + 1;
  }

  /** The seq the next event gets. */
  get nextSeq(): number {
    return this.#nextSeq;
  }

  /** Use up a seq without keeping an event under it (a delta while offline: the daemon never stores them). */
  skip(): number {
    this.#seq.dirty();
    return this.#nextSeq++;
  }

  /**
   * Queue one event under the next seq; it goes out on the next `later` turn when the socket is ready.
   * @param size roughly how many characters the payload holds (for the buffer's memory bound)
   */
  push<T extends AgentEventType>(type: T, payload: EventPayload<T>, size: number): EventFrame {
    const seq = this.#nextSeq++;
    this.#seq.dirty();
    const ev: EventFrame = {
      v: PROTOCOL_VERSION,
      sessionId: this.#sessionId,
      seq,
      ts: Date.now(),
      type,
      ...payload,
    };
    this.#buf.push(ev, size, type === "buffer_overflow");
    if (this.#socket.ready) this.queueFlush();
    return ev;
  }

  /** Send `ev` again on the ready socket, unless it is still in the buffer (whose replay sends it anyway). */
  resend(ev: EventFrame): void {
    const ws = this.#socket.ws;
    if (!this.#socket.ready || !ws || this.#buf.has(ev.seq)) return;
    try {
      ws.send(encode(ev));
    } catch (err) {
      this.#log(`session ${this.#sessionId}: send failed`, err);
    }
  }

  /**
   * A welcome came with the daemon's last seq: renumber what this process queued if the daemon already holds
   * its seqs (first welcome only), and send again everything it did not acknowledge.
   */
  welcome(lastSeq: number): void {
    if (!this.#everWelcomed && lastSeq >= this.#baseSeq) {
      // The daemon holds seqs this process thought were free (the seq file lagged behind a crash).
      // Nothing was sent yet in this process, so renumber everything above the daemon's last one.
      const shift = lastSeq + 1 - this.#baseSeq;
      this.#buf.renumber(shift);
      this.#nextSeq += shift;
      this.#baseSeq += shift;
      this.#seq.dirty();
      this.#log(
        `session ${this.#sessionId}: renumbered local events after daemon seq ${lastSeq}`,
      );
    } else if (lastSeq >= this.#nextSeq) {
      this.#nextSeq = lastSeq + 1;
      this.#seq.dirty();
    }
    this.#everWelcomed = true;
    this.#buf.rewind(lastSeq);
  }

  /** What the buffer's bounds dropped since the last call, if anything (to report as `buffer_overflow`). */
  takeOverflow(): Overflow | null {
    return this.#buf.takeOverflow();
  }

  /** The daemon acknowledged every event up to `lastSeq`. */
  ack(lastSeq: number): void {
    this.#buf.trim(lastSeq);
  }

  /** True when the daemon acknowledged the event `seq` (nothing up to it is held any more). */
  delivered(seq: number): boolean {
    const head = this.#buf.first;
    return !head || head.seq > seq;
  }

  /** Write the seq file now (pi is about to exit). */
  writeSync(): void {
    this.#seq.writeSync();
  }

  /** Drop every event held (the link closed for good). */
  clear(): void {
    this.#buf.clear();
  }

  /** Flush on the next `later` turn (once, however many events are queued meanwhile). */
  queueFlush(): void {
    if (this.#flushQueued) return;
    this.#flushQueued = true;
    later(() => this.flush());
  }

  /** Write queued events to the ready socket now, at most SEND_BATCH frames, and queue the rest. */
  flush(): void {
    this.#flushQueued = false;
    const ws = this.#socket.ws;
    if (!this.#socket.ready || !ws) return;
    // With the daemon's "batch" feature, queued events travel many to a frame (one ack for all of them).
    const batching = this.#batching();
    const buf = this.#buf;
    try {
      for (let n = 0; buf.unsent > 0; n++) {
        if (n >= SEND_BATCH) return this.queueFlush();
        if (ws.bufferedAmount > HIGH_WATER_BYTES) {
          unref(setTimeout(() => this.queueFlush(), 20));
          return;
        }
        if (batching && buf.unsent > 1) {
          const { text, count } = encodeBatch(this.#sessionId, (i) => buf.unsentAt(i), BATCH_MAX_EVENTS);
          ws.send(text);
          buf.markSent(count);
          // Bound the work of one turn by events, not frames, so a long replay still yields to pi.
          n += Math.floor(count / 2);
          continue;
        }
        ws.send(encode(buf.peekUnsent()!));
        buf.markSent();
      }
    } catch (err) {
      this.#log(`session ${this.#sessionId}: send failed`, err);
      try {
        ws.close(CloseCode.internal);
      } catch { /* already closing */ }
    }
  }
}
