/**
 * The event log's commits off the event loop. node:sqlite is synchronous: a commit's SQL (its INSERTs, the
 * BEGIN and COMMIT) ran on the loop, and every frame that arrived meanwhile waited for it — 59–63 % of the deltas
 * that reached the daemon's handler later than a bare relay's p99 waited behind a commit (bench/latency.ts
 * with SEGMENTS=1). Here a worker thread with its own connection to the file runs the SQL of planned batches
 * (lib/batch_plan.ts), one at a time, while the loop goes on; the loop publishes once the thread says it is
 * stored. The daemon can also wait for the batch in flight synchronously (`settle`, with Atomics on a shared
 * signal), for the few moments that must see every queued event stored: a plugin's `welcome`, a session's
 * deletion, shutdown.
 */
import type { BatchSql } from "./batch_plan.ts";

/** What the daemon tells the thread first. */
export interface WriterStart {
  path: string;
  buffer: SharedArrayBuffer;
}

/** One planned batch's SQL, numbered. */
export interface WriterFrame {
  id: number;
  sql: BatchSql;
}

export const WriteStatus = { stored: 1, rowsThere: 2, failed: 3 } as const;

/** Bytes of a failure's message carried in the signal (a longer one is cut). */
const MESSAGE_BYTES = 1024;
/**
 * How long `settle` waits for the thread before it gives the batch up as failed (it is then stored on the loop,
 * where a row the thread stored after all is recognised as a replay). A commit waits at most the busy timeout
 * for a lock; this is far past it.
 */
const SETTLE_TIMEOUT_MS = 10_000;

/**
 * The signal the thread and the daemon share: the id of the last finished batch, its status and its failure's
 * message. The thread writes the outcome before the id, so an id seen means its outcome is there.
 */
export function writerSignal(buffer: SharedArrayBuffer) {
  const ints = new Int32Array(buffer, 0, 3);
  const bytes = new Uint8Array(buffer, 12, MESSAGE_BYTES);
  return {
    finish(id: number, status: number, message: string): void {
      const { written } = new TextEncoder().encodeInto(message, bytes);
      ints[1] = status;
      ints[2] = written;
      Atomics.store(ints, 0, id);
      Atomics.notify(ints, 0);
    },
    /** @returns false when batch `id` did not finish within `ms`. */
    wait(id: number, ms: number): boolean {
      const deadline = performance.now() + ms;
      for (let seen = Atomics.load(ints, 0); seen !== id; seen = Atomics.load(ints, 0)) {
        const left = deadline - performance.now();
        if (left <= 0) return false;
        Atomics.wait(ints, 0, seen, left);
      }
      return true;
    },
    outcome(): { status: number; message: string } {
      return { status: ints[1], message: new TextDecoder().decode(bytes.slice(0, ints[2])) };
    },
  };
}

/** Told once per batch: null when it is stored, else why nothing of it was. */
export type WriteDone = (error: Error | null) => void;

/** The worker thread that commits planned batches to one database file. */
export class EventWriter {
  #worker: Worker;
  #signal: ReturnType<typeof writerSignal>;
  #nextId = 0;
  #inFlight: { id: number; done: WriteDone } | null = null;
  /** Why the thread stopped (it then takes no batch), or null while it runs. */
  #stopped: string | null = null;
  #closed = Promise.withResolvers<void>();

  constructor(path: string) {
    const buffer = new SharedArrayBuffer(12 + MESSAGE_BYTES);
    this.#signal = writerSignal(buffer);
    this.#worker = new Worker(new URL("./event_writer_worker.ts", import.meta.url), { type: "module" });
    this.#worker.onmessage = (e: MessageEvent<{ id?: number; failed?: string; closed?: boolean }>) => {
      if (e.data.id !== undefined) return this.#finished(e.data.id);
      if (e.data.failed !== undefined) this.#stop(e.data.failed);
      if (e.data.closed) this.#closed.resolve();
    };
    this.#worker.onerror = (e) => {
      e.preventDefault();
      this.#stop(e.message);
    };
    this.#worker.postMessage({ path, buffer } satisfies WriterStart);
  }

  /** Whether a batch can go to the thread now: it runs, and no batch is in flight. */
  get ready(): boolean {
    return this.#stopped === null && this.#inFlight === null;
  }

  /** Commit a batch's SQL on the thread; `done` is called once, from the loop or from `settle`. */
  write(sql: BatchSql, done: WriteDone): void {
    if (!this.ready) throw new Error("the event writer takes one batch at a time");
    const id = ++this.#nextId;
    this.#inFlight = { id, done };
    this.#worker.postMessage({ id, sql } satisfies WriterFrame);
  }

  /** Block the loop until the batch in flight (if any) is finished, its `done` called. */
  settle(): void {
    const inFlight = this.#inFlight;
    if (!inFlight) return;
    if (this.#stopped === null && this.#signal.wait(inFlight.id, SETTLE_TIMEOUT_MS)) {
      return this.#finished(inFlight.id);
    }
    this.#inFlight = null;
    inFlight.done(new Error(this.#stopped ?? "the event writer thread did not answer"));
  }

  #finished(id: number): void {
    const inFlight = this.#inFlight;
    if (inFlight?.id !== id) return; // settled already
    this.#inFlight = null;
    const { status, message } = this.#signal.outcome();
    inFlight.done(status === WriteStatus.stored ? null : new Error(message));
  }

  #stop(why: string): void {
    if (this.#stopped === null) {
      console.error(`lvmh: the event writer thread stopped (${why}); commits run on the loop`);
    }
    this.#stopped ??= why;
    this.settle();
    this.#closed.resolve();
  }

  /** Finish the batch in flight, then close the thread's connection and end it. */
  async close(): Promise<void> {
    this.settle();
    if (this.#stopped === null) {
      this.#stopped = "closed";
      this.#worker.postMessage("close");
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise((r) => timer = setTimeout(r, SETTLE_TIMEOUT_MS));
      await Promise.race([this.#closed.promise, late]);
      clearTimeout(timer);
    }
    this.#worker.terminate();
  }

  /** End the thread now (its connection goes with it; a batch in flight is settled first). */
  terminate(): void {
    this.settle();
    this.#stopped ??= "closed";
    this.#worker.terminate();
  }
}
