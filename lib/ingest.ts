/**
 * The write path for plugin events: queue, commit once per tick in one transaction, then (and only then)
 * acknowledge to the plugin and publish to browsers. Ephemeral deltas skip SQLite and keep their order
 * relative to the session's persisted events, except that browser sockets get them at once (see `push`).
 */
import { type AgentEvent, isEphemeral } from "./protocol.ts";
import { type EncodedEvent, encodedEvent, type Encoding } from "./event_codec.ts";
import { type SessionCommit, type Store, wholeFileError } from "./store.ts";
import type { Hub, PublishedEvent } from "./hub.ts";
import { FencedError } from "./storage/event_log.ts";
import { traced } from "./delta_trace.ts";

/** The plugin connection an event came from: told when its events are stored, or that storing failed. */
export interface EventOrigin {
  ack(lastSeq: number): void;
  fail(error: Error): void;
}

/**
 * Where events are stored first when several replicas share one database (lib/replica/replica.ts): the shared
 * log commits, and only then does this replica's own file store the events and the plugin get its ack.
 */
export interface SharedLog {
  /**
   * Store one session's events in the shared log.
   * @throws {FencedError} when another replica holds the session now.
   */
  append(sessionId: string, events: readonly AgentEvent[]): Promise<{ lastSeq: number }>;
  /** This replica's file has the session's events up to `lastSeq` (its feed need not read them back). */
  copied(sessionId: string, lastSeq: number): void;
  /**
   * Committed in the shared log, the session's events could not be stored in this file: its feed must read
   * them back, and no later `copied` may move past them.
   */
  notCopied(sessionId: string): void;
  /** Live deltas of a session held here, for the other replicas' browsers; never throws or waits. */
  live(sessionId: string, after: number, events: readonly EncodedEvent[]): void;
}

/** A session's commit to the shared log in flight, and what came for the session meanwhile. */
interface SharedCommit {
  waiting: Pending[];
  done: Promise<void>;
}

interface Pending {
  event: AgentEvent;
  origin: EventOrigin;
  /** Its encoding cut from the frame it came in, when there is one (lib/event_codec.ts `cutFrom`). */
  cut?: Encoding;
  /** A delta the browsers got at once, ahead of the session's events queued before it, as it was sent. */
  sentAhead?: PublishedEvent;
}

/**
 * Past this many queued events the queue is flushed at once instead of waiting for the tick. A flood saturates
 * the loop and timers fire late, so the queue reached this bound on every commit of the ingest bench: at 20,000
 * the events in flight outlived young-generation GCs (promoted, then collected in old space); 2,000 rows per
 * transaction cost SQLite no more per row than 20,000, and the daemon's CPU per event went 11–13 → 10–11 µs.
 */
const MAX_QUEUE = 2_000;
/**
 * Commits are at least this far apart while events keep coming: bigger transactions cost far less per row
 * (SQLite does about twice the rows per second in batches of 1000 as in batches of 100), for at most this
 * much added latency. Sparse events still commit on the next tick.
 */
const MIN_COMMIT_INTERVAL_MS = 2;
/*
 * After SQLite refused a write for the whole file (full, locked past the busy timeout), the store's write gate
 * (lib/write_gate.ts) refuses every write at once for a pause, then tries without waiting for a lock, until
 * one succeeds: commits fail without stopping the event loop, their sockets are closed without an ack, and the
 * timer of a commit waits out the pause rather than failing.
 */

/** Batches events from every plugin socket into one SQLite transaction per tick. */
export class Ingest {
  #queue: Pending[] = [];
  #pendingSessions = new Set<string>();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #lastFlush = 0;
  #store: Store;
  #hub: Hub;
  #onCommitted: (commits: SessionCommit[]) => void;
  #shared: SharedLog | null;
  /** With a shared log: each session's commit in flight (one at a time keeps the session's order). */
  #inFlight = new Map<string, SharedCommit>();

  /**
   * @param onCommitted called after every commit that stored something (the session list changed).
   * @param shared the log of several replicas, committed before this replica's file (null: the file alone).
   */
  constructor(
    store: Store,
    hub: Hub,
    onCommitted: (commits: SessionCommit[]) => void = () => {},
    shared: SharedLog | null = null,
  ) {
    this.#store = store;
    this.#hub = hub;
    this.#onCommitted = onCommitted;
    this.#shared = shared;
  }

  #pushed = 0;

  /** Events accepted so far (persisted and live): the daemon's sign of activity for lib/memory.ts. */
  get pushed(): number {
    return this.#pushed;
  }

  /**
   * Accept one event from a plugin; it is stored and published within a tick.
   * @param cut its encoding cut from the frame it came in, so it is not encoded again.
   */
  push(event: AgentEvent, origin: EventOrigin, cut?: Encoding): void {
    this.#pushed++;
    if (
      isEphemeral(event.type) && !this.#pendingSessions.has(event.sessionId) &&
      !this.#inFlight.has(event.sessionId)
    ) {
      // Nothing of this session waits for the disk, so the delta can go out now, in order.
      // With its object, so in-process followers (the list's glances) do not parse it back.
      const after = this.#store.lastSeq(event.sessionId);
      const encoded = [encodedEvent(event, cut)];
      this.#hub.publishEvents(event.sessionId, after, encoded);
      this.#shared?.live(event.sessionId, after, encoded);
      return;
    }
    // Behind events of its session that wait for the disk. The protocol fans deltas out at once, and a browser's
    // conversation keeps one that comes before the stored events under it (ui/conversation.ts): browsers get
    // it now, the rest (the list's glances, SSE streams, other replicas) in order after the commit. Waiting for
    // the commit held the first delta of every answer: at 3,000 sessions its p50 from the plugin to a browser
    // was 0.78 ms against 0.35 for the others (bench/latency.ts).
    const sentAhead = isEphemeral(event.type) ? { ...encodedEvent(event, cut), sentAhead: true } : undefined;
    if (sentAhead) this.#hub.publishAhead(event.sessionId, this.#store.lastSeq(event.sessionId), [sentAhead]);
    this.#queue.push({ event, origin, cut, sentAhead });
    this.#pendingSessions.add(event.sessionId);
    if (this.#queue.length >= MAX_QUEUE) return this.flush();
    // Not at once for a delta: a socket's send goes out when the event loop next polls, after the microtasks,
    // so a commit right behind the delta's frame (as when it waited for it) would hold its send back.
    this.#timer ??= setTimeout(
      () => this.flush(),
      Math.max(
        0,
        Math.max(this.#lastFlush + MIN_COMMIT_INTERVAL_MS, this.#store.gate.retryAt) - performance.now(),
      ),
    );
  }

  /** Commit everything queued now (also used before `welcome` and at shutdown). */
  flush(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    const batch = this.#queue;
    if (batch.length === 0) return;
    this.#lastFlush = performance.now();
    this.#queue = [];
    this.#pendingSessions.clear();
    if (this.#shared) return this.#commitShared(this.#shared, batch);
    const commits = this.#commit(batch);
    if (commits.length) traced("commit: session rows", () => this.#onCommitted(commits));
  }

  /** Resolves once the commits in flight to a shared log are done (at once without one). */
  async drained(): Promise<void> {
    while (this.#inFlight.size) await Promise.all([...this.#inFlight.values()].map((c) => c.done));
  }

  /**
   * With a shared log: resolves once everything of the session queued so far is committed (or failed), so a
   * `welcome` counts it.
   */
  async settled(sessionId: string): Promise<void> {
    this.flushSession(sessionId);
    for (let c = this.#inFlight.get(sessionId); c; c = this.#inFlight.get(sessionId)) await c.done;
  }

  /**
   * The highest committed seq of a session, after committing whatever of it is still queued (a `welcome` must
   * count events an older socket sent just before it closed).
   */
  committedSeq(sessionId: string): number {
    this.flushSession(sessionId);
    return this.#store.lastSeq(sessionId);
  }

  /** Commit now whatever of a session is still queued (nothing happens when none is). */
  flushSession(sessionId: string): void {
    if (this.#pendingSessions.has(sessionId)) this.flush();
  }

  /** Store a batch; if it fails as a whole, retry each session alone so one bad session cannot sink others. */
  #commit(batch: Pending[]): SessionCommit[] {
    try {
      return this.#persist(batch);
    } catch (error) {
      const bySession = Map.groupBy(batch, (p) => p.event.sessionId);
      // A full disk or a lock held past the busy timeout fails every session alike (and the gate now refuses
      // every write for its pause): retrying each session alone would not store any of them.
      if (bySession.size === 1 || wholeFileError(error)) {
        this.#fail(batch, error);
        return [];
      }
      return [...bySession.values()].flatMap((part) => {
        try {
          return this.#persist(part);
        } catch (error) {
          this.#fail(part, error);
          return [];
        }
      });
    }
  }

  #persist(batch: Pending[]): SessionCommit[] {
    const persisted: AgentEvent[] = [];
    const cuts: (Encoding | undefined)[] = [];
    for (const p of batch) {
      if (isEphemeral(p.event.type)) continue;
      persisted.push(p.event);
      cuts.push(p.cut);
    }
    const commits = traced("commit: SQLite", () => this.#store.appendBatch(persisted, cuts));
    const acked = new Map(commits.map((c) => [c.sessionId, c.lastSeq]));
    return traced("commit: publish", () => this.#publish(batch, commits, acked));
  }

  /**
   * Commit a batch in the shared log, each session on its own (one session's failure or fence costs only its
   * own events, and a slow one holds up no other), then store what committed in this replica's file and
   * publish it. A session has one commit in flight; what comes meanwhile waits and goes in its next one.
   */
  #commitShared(shared: SharedLog, batch: Pending[]): void {
    for (const [sessionId, part] of Map.groupBy(batch, (p) => p.event.sessionId)) {
      const running = this.#inFlight.get(sessionId);
      if (running) running.waiting.push(...part);
      else this.#startShared(shared, sessionId, part);
    }
  }

  #startShared(shared: SharedLog, sessionId: string, part: Pending[]): void {
    const entry: SharedCommit = { waiting: [], done: Promise.resolve() };
    this.#inFlight.set(sessionId, entry);
    entry.done = this.#commitSession(shared, sessionId, part).then((stored) => {
      // What came meanwhile follows what failed: stored now, it would leave a gap the plugin's replay (from the
      // new welcome's lastSeq) never fills. Its socket is closed already; the replay brings it all again.
      if (!stored && entry.waiting.length) {
        this.#fail(entry.waiting.splice(0), new Error("an earlier write failed"));
      }
    }, (error) => {
      // A follower's own failure (onCommitted); the session's next commit must still go.
      console.error(`lvmh: after a commit to the shared log: ${(error as Error).message}`);
    }).finally(() => {
      if (entry.waiting.length) this.#startShared(shared, sessionId, entry.waiting);
      else this.#inFlight.delete(sessionId);
    });
  }

  /** @returns false when the shared log refused or failed the session's events (nothing of them stored). */
  async #commitSession(shared: SharedLog, sessionId: string, part: Pending[]): Promise<boolean> {
    // The other replicas get the deltas before the stored events around them are even sent: they hold each
    // delta until their copy has the event it follows, and publish it among the batch that brings it. Sent
    // after the commit, they lost the race with the commit's own hint and came too late to be shown.
    this.#shareDeltas(shared, sessionId, part);
    const persisted = part.filter((p) => !isEphemeral(p.event.type)).map((p) => p.event);
    const acked = new Map<string, number>();
    if (persisted.length) {
      try {
        acked.set(sessionId, (await shared.append(sessionId, persisted)).lastSeq);
      } catch (error) {
        this.#fail(part, error);
        return false;
      }
    }
    let local: SessionCommit[] = [];
    try {
      if (persisted.length) local = this.#store.appendBatch(persisted);
    } catch (error) {
      // Committed in the shared log (so acked), but not in this file: the feed brings it again.
      console.error(`lvmh: cannot copy committed events to this replica's file: ${(error as Error).message}`);
      shared.notCopied(sessionId);
      for (const [, lastSeq] of acked) part.at(-1)!.origin.ack(lastSeq);
      return true;
    }
    const commits = this.#publish(part, local, acked);
    for (const [, lastSeq] of acked) shared.copied(sessionId, lastSeq);
    if (commits.length) this.#onCommitted(commits);
    return true;
  }

  /** Ack each session's origin with its stored lastSeq, publish its new events and deltas in seq order. */
  #publish(batch: Pending[], commits: SessionCommit[], acked: ReadonlyMap<string, number>): SessionCommit[] {
    const origins = new Map<string, EventOrigin>();
    const ephemeral = new Map<string, PublishedEvent[]>();
    for (const { event, origin, cut, sentAhead } of batch) {
      origins.set(event.sessionId, origin);
      if (!isEphemeral(event.type)) continue;
      const list = ephemeral.get(event.sessionId) ?? [];
      list.push(sentAhead ?? encodedEvent(event, cut));
      ephemeral.set(event.sessionId, list);
    }
    const after = new Map(commits.map((c) => [c.sessionId, c.after]));
    for (const [sessionId, lastSeq] of acked) origins.get(sessionId)?.ack(lastSeq);
    for (const sessionId of origins.keys()) {
      const events = [
        ...commits.find((c) => c.sessionId === sessionId)?.inserted ?? [],
        ...ephemeral.get(sessionId) ?? [],
      ].sort((a, b) => a.seq - b.seq);
      const from = after.get(sessionId) ?? this.#store.lastSeq(sessionId);
      this.#hub.publishEvents(sessionId, from, events);
    }
    return commits.filter((c) => c.inserted.length > 0);
  }

  /** Hand the deltas of a session's batch (arrival order) to the shared log, each after the stored event before it. */
  #shareDeltas(shared: SharedLog, sessionId: string, part: readonly Pending[]): void {
    let after = this.#store.lastSeq(sessionId);
    let run: EncodedEvent[] = [];
    for (const { event, cut } of part) {
      if (isEphemeral(event.type)) {
        run.push(encodedEvent(event, cut));
        continue;
      }
      if (run.length) shared.live(sessionId, after, run);
      run = [];
      after = Math.max(after, event.seq);
    }
    if (run.length) shared.live(sessionId, after, run);
  }

  #fail(batch: Pending[], cause: unknown): void {
    const origins = new Set(batch.map((p) => p.origin));
    const sessions = new Set(batch.map((p) => p.event.sessionId)).size;
    console.error(
      `lvmh: cannot store ${batch.length} event(s) of ${sessions} session(s): ${
        (cause as Error)?.message
      }; ` +
        `${origins.size} plugin socket(s) closed without an ack, their replay will repair it`,
    );
    // A fence is passed on as it is (the socket is closed as replaced); anything else as a failed write.
    const error = cause instanceof FencedError
      ? cause
      : new Error("Cannot store events: the database write failed");
    for (const origin of origins) origin.fail(error);
  }
}
