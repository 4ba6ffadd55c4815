/**
 * Server-Sent Events over a ReadableStream with a bounded queue. What the stream holds but the peer has not
 * read yet is `bufferedAmount()`, so an SSE reader is a hub `Subscriber` like a browser socket: one that
 * stops reading is cut off with its queue dropped, never buffered without limit.
 */
import { InvalidError } from "./errors.ts";

/** A comment line goes out this often, so proxies do not close an idle stream. */
export const HEARTBEAT_MS = 15_000;
/** The stream asks its source for more (catch-up pages) while it holds less than this. */
export const HIGH_WATER_BYTES = 64 * 1024;
/** The reconnect delay suggested to `EventSource` clients. */
export const RETRY_MS = 1000;
/**
 * A stream whose reader took nothing of what waits for it over this many heartbeats in a row is cut off: a
 * reader stalled in its catch-up costs no more memory (the queue is bounded), but would hold its connection
 * for ever.
 */
export const STALLED_BEATS = 3;

const encoder = new TextEncoder();

/** One SSE event; `data` is one line of JSON in practice. */
export interface SseEvent {
  id?: number | string;
  event?: string;
  data: string;
}

/** Encode one event in the `text/event-stream` format (a multi-line `data` becomes several `data:` lines). */
export function sseEvent(e: SseEvent): string {
  let out = e.id === undefined ? "" : `id: ${e.id}\n`;
  if (e.event) out += `event: ${e.event}\n`;
  for (const line of e.data.split(/\r\n|\r|\n/)) out += `data: ${line}\n`;
  return out + "\n";
}

/** What feeds a stream. */
export interface SseSource {
  /** The queue has room: write more if there is more to catch up on (live sources write on their own). */
  pull?(stream: SseStream): void;
  /** The stream ended (the reader went away, or `close`/`abort`): release subscriptions. Called once. */
  end?(): void;
}

/** A bounded SSE body: write events to it, hand `body` to a `Response`. */
export class SseStream {
  /** The response body. */
  readonly body: ReadableStream<Uint8Array>;
  #controller!: ReadableStreamDefaultController<Uint8Array>;
  #ended = false;
  #source: SseSource;
  #heartbeat: ReturnType<typeof setInterval>;
  #onEnd: (() => void)[] = [];
  /** Bytes ever queued, and how many of them the reader had taken at the last heartbeat. */
  #queued = 0;
  #takenAtBeat = 0;
  #stalledBeats = 0;

  /** @param options.heartbeatMs how often a comment line is written (default `HEARTBEAT_MS`). */
  constructor(source: SseSource, options: { heartbeatMs?: number } = {}) {
    this.#source = source;
    this.body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.#controller = controller;
      },
      pull: () => {
        if (!this.#ended) this.#source.pull?.(this);
      },
      cancel: () => this.#end(),
    }, { highWaterMark: HIGH_WATER_BYTES, size: (chunk) => chunk.byteLength });
    this.write(`retry: ${RETRY_MS}\n\n`);
    this.#heartbeat = setInterval(() => this.#beat(), options.heartbeatMs ?? HEARTBEAT_MS);
  }

  #beat(): void {
    const waiting = this.bufferedAmount();
    const taken = this.#queued - waiting;
    this.#stalledBeats = waiting > 0 && taken === this.#takenAtBeat ? this.#stalledBeats + 1 : 0;
    this.#takenAtBeat = taken;
    if (this.#stalledBeats >= STALLED_BEATS) return this.abort("slow consumer: nothing read for too long");
    this.write(": keep-alive\n\n");
  }

  /** True once the stream has ended; writes are then ignored. */
  get ended(): boolean {
    return this.#ended;
  }

  /** Queue raw SSE text (use `sseEvent`); ignored after the end. */
  write(text: string): void {
    if (this.#ended) return;
    try {
      const bytes = encoder.encode(text);
      this.#controller.enqueue(bytes);
      this.#queued += bytes.byteLength;
    } catch {
      this.#end();
    }
  }

  /** Call `fn` once the stream has ended (at once when it already has). */
  onEnd(fn: () => void): void {
    if (this.#ended) fn();
    else this.#onEnd.push(fn);
  }

  /** Bytes queued but not yet taken by the HTTP server. */
  bufferedAmount(): number {
    if (this.#ended) return 0;
    return Math.max(0, HIGH_WATER_BYTES - (this.#controller.desiredSize ?? HIGH_WATER_BYTES));
  }

  /** End the stream normally: what is queued is still delivered. */
  close(): void {
    if (this.#ended) return;
    try {
      this.#controller.close();
    } catch { /* already closed by the reader */ }
    this.#end();
  }

  /** Cut the stream off, dropping what is queued (a reader that stopped reading). */
  abort(reason: string): void {
    if (this.#ended) return;
    try {
      this.#controller.error(new Error(reason));
    } catch { /* already closed by the reader */ }
    this.#end();
  }

  #end(): void {
    if (this.#ended) return;
    this.#ended = true;
    clearInterval(this.#heartbeat);
    this.#source.end?.();
    for (const fn of this.#onEnd.splice(0)) fn();
  }
}

/** The HTTP response of a stream, with the headers proxies and `EventSource` need. */
export function sseResponse(stream: SseStream): Response {
  return new Response(stream.body, {
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
      // nginx buffers responses unless told not to, which would hold events back.
      "x-accel-buffering": "no",
    },
  });
}

/**
 * Where a client resumes: the `Last-Event-ID` header when present (an `EventSource` reconnecting), else
 * the `after` query parameter, else null.
 * @throws {InvalidError} when the value is not a non-negative integer.
 */
export function resumePoint(req: Request, url: URL): number | null {
  const raw = req.headers.get("last-event-id") ?? url.searchParams.get("after");
  if (raw === null || raw.trim() === "") return null;
  const n = Number(raw.trim());
  if (!Number.isSafeInteger(n) || n < 0) {
    throw new InvalidError(`resume point must be a non-negative integer, got ${JSON.stringify(raw)}`);
  }
  return n;
}
