/**
 * The daemon-wide stream (`GET /api/stream`): every frame the hub broadcasts (session list changes,
 * approvals, spawn jobs), each with a daemon-wide cursor as its SSE id. Cursors start at the clock
 * (milliseconds × 1000) when the feed starts, so they keep increasing across daemon restarts. The last
 * `FEED_RING` frames are kept in memory: a client resuming within the same run gets exactly what it
 * missed; one from before a restart, or further behind, gets fresh snapshots instead (these frames carry
 * state, so the current state is all it missed).
 */
import { type Hub, MAX_BACKLOG_BYTES, type Subscriber } from "./hub.ts";
import type { Sessions } from "./sessions.ts";
import type { Approvals } from "./approvals.ts";
import type { Spawner } from "./spawner.ts";
import { sseEvent, SseStream } from "./sse.ts";

/** How many recent frames a resuming client can be given. */
export const FEED_RING = 1000;

interface Entry {
  id: number;
  type: string;
  data: string;
}

/** Options of `DaemonFeed.open`, for tests. */
export interface FeedStreamOptions {
  heartbeatMs?: number;
}

/** What the feed reads: the hub it follows, and the owners of the state a fresh client starts from. */
export interface FeedParts {
  hub: Hub;
  sessions: Sessions;
  approvals: Approvals;
  spawner: Spawner;
}

/**
 * Numbers the hub's broadcasts and fans them out to SSE streams, each with its own backlog bound. Built with
 * the daemon (`app.feed`); it follows the hub from the first stream on, since numbering frames nobody asked
 * for would cost every broadcast a copy.
 */
export class DaemonFeed {
  #parts: FeedParts;
  #cursor: number;
  /** Frames with ids above this one are all still in the ring. */
  #floor: number;
  #ring: Entry[] = [];
  #streams = new Set<SseStream>();
  #sub: Subscriber | null = null;

  /** @param parts read at each use, so a part swapped on the app (tests) counts. */
  constructor(parts: FeedParts) {
    this.#parts = parts;
    this.#cursor = this.#floor = Date.now() * 1000;
  }

  /** The id of the latest frame. */
  get cursor(): number {
    return this.#cursor;
  }

  /**
   * Open a stream for one client.
   * @param lastId the `Last-Event-ID` it resumes after, or null for a fresh start.
   */
  open(lastId: number | null, options: FeedStreamOptions = {}): SseStream {
    this.#follow();
    const stream = new SseStream({ end: () => this.#streams.delete(stream) }, options);
    if (lastId !== null && lastId >= this.#floor && lastId <= this.#cursor) {
      for (const e of this.#ring) {
        if (e.id > lastId) stream.write(sseEvent({ id: e.id, event: e.type, data: e.data }));
      }
    } else {
      const frames = snapshotFrames(this.#parts);
      frames.forEach((f, i) =>
        stream.write(sseEvent({
          // Only the last snapshot carries the cursor: a client cut off halfway asks for all of them again.
          id: i === frames.length - 1 ? this.#cursor : undefined,
          event: f.type,
          data: JSON.stringify(f),
        }))
      );
    }
    this.#streams.add(stream);
    return stream;
  }

  /** End every stream and stop following the hub (shutdown). */
  close(): void {
    if (this.#sub) this.#parts.hub.leave(this.#sub);
    this.#sub = null;
    for (const s of [...this.#streams]) s.close();
  }

  #follow(): void {
    if (this.#sub) return;
    this.#sub = {
      send: (data) => this.#publish(data),
      // The feed itself never queues: each stream's own backlog is checked in #publish.
      bufferedAmount: () => 0,
      close: () => {
        this.#sub = null;
        for (const s of [...this.#streams]) s.close();
      },
    };
    this.#parts.hub.join(this.#sub);
  }

  #publish(data: string): void {
    const type = frameType(data);
    if (type === "events" || type === "pong" || type === "error") return;
    const entry = { id: ++this.#cursor, type, data };
    this.#ring.push(entry);
    if (this.#ring.length > FEED_RING) this.#floor = this.#ring.shift()!.id;
    const text = sseEvent({ id: entry.id, event: type, data });
    for (const s of [...this.#streams]) {
      if (s.bufferedAmount() > MAX_BACKLOG_BYTES) s.abort("slow consumer: backlog limit exceeded");
      else s.write(text);
    }
  }
}

/** The state a fresh client starts from: the session list, the waiting approvals and the spawn jobs. */
function snapshotFrames(app: FeedParts): ({ type: string } & Record<string, unknown>)[] {
  return [
    { type: "session_list", sessions: app.sessions.list() },
    // As a browser socket gets it: a dashboard must see what waits without waiting for the next change.
    app.approvals.frame(),
    { type: "spawn_status", jobs: app.spawner.jobs() },
  ];
}

/** The `type` of an encoded frame: frames are object literals with `type` first, else parse. */
function frameType(data: string): string {
  const m = /^\{"type":"([a-z_]+)"/.exec(data);
  return m ? m[1] : String((JSON.parse(data) as { type?: unknown }).type);
}
