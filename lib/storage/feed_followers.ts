/**
 * The follower side of an event feed, the same on every store: per-session cursors, reads of `seq > cursor`
 * in pages, one read at a time per session (so batches leave in seq order), and the sweep that compares the
 * sessions' counter rows with the cursors. A store supplies the reads (`FeedSource`) and passes hints in.
 *
 * Each follower has cursors of its own, taken from the counter rows when it starts: "from now" is exact for a
 * follower started late, whatever the others had reached. A replica is meant to have one follower (its hub),
 * so one read per hint per replica.
 */
import type { EventRow } from "./event_log.ts";
import type { OnEvents, OnSessions } from "./event_feed.ts";

/** What a follower reads from the store. */
export interface FeedSource {
  /** Every session row's counter (its highest committed seq). */
  counters(): Promise<Map<string, number>>;
  /** One session's counter, null when it has no row. */
  counter(sessionId: string): Promise<number | null>;
  /** Up to `limit` events with `seq > after`, seq ascending. */
  events(sessionId: string, after: number, limit: number): Promise<EventRow[]>;
}

/** A session to look at: events up to `upTo` at least, and whether its row may have come, gone or come anew. */
interface Pending {
  upTo: number;
  check: boolean;
}

/** One follower's cursors and reads. */
class Follower {
  #source: FeedSource;
  #onEvents: OnEvents;
  #onSessions: OnSessions;
  #page: number;
  #cursors = new Map<string, number>();
  #pending = new Map<string, Pending>();
  #busy = new Set<string>();
  #ready = false;
  #writtenHere: (sessionId: string) => boolean;
  stopped = false;

  constructor(
    source: FeedSource,
    onEvents: OnEvents,
    onSessions: OnSessions,
    page: number,
    writtenHere: (sessionId: string) => boolean,
  ) {
    this.#source = source;
    this.#onEvents = onEvents;
    this.#onSessions = onSessions;
    this.#page = page;
    this.#writtenHere = writtenHere;
  }

  /**
   * Take the cursors from the counter rows ("now"), then look at what was hinted meanwhile. With `from`, start
   * at those cursors instead (where a replica's local copy stands) and catch up to the counter rows at once.
   */
  async start(from?: ReadonlyMap<string, number>): Promise<void> {
    const counters = await this.#source.counters();
    this.#cursors = from ? new Map(from) : counters;
    this.#ready = true;
    if (from) this.reconcile(counters);
    for (const id of [...this.#pending.keys()]) void this.#run(id);
  }

  /**
   * The caller has the session's events up to `lastSeq` already (it appended them itself): move the cursor
   * there instead of reading them back. A read in flight below it is dropped (see `#catchUp`'s cursor check).
   */
  advance(sessionId: string, lastSeq: number): void {
    const cursor = this.#cursors.get(sessionId);
    if (!this.#ready || (cursor !== undefined && lastSeq <= cursor)) return;
    // A session new to this follower too: the caller has all of it, so its first hint reads nothing back (a
    // holder's own new sessions were read back whole, a third of the ingest benchmark's events).
    this.#cursors.set(sessionId, lastSeq);
  }

  /** Somebody says the session's counter is at `lastSeq` (-1: its row was deleted). */
  hint(sessionId: string, lastSeq: number): void {
    if (this.stopped) return;
    // Its writer here moves the cursor itself (`advance`); read, a commit still on its way back to the writer
    // would be read back (the sweep found that for a tenth of the ingest benchmark's events). A deletion still
    // counts, and once the writer is gone the next sweep finds whatever it missed.
    if (lastSeq >= 0 && this.#writtenHere(sessionId)) return;
    const cursor = this.#cursors.get(sessionId);
    if (this.#ready && cursor === lastSeq && !this.#pending.has(sessionId)) return;
    // Unknown session or a counter behind the cursor: the row came, went, or was made anew under this id.
    const check = this.#ready && (cursor === undefined || lastSeq < cursor);
    const was = this.#pending.get(sessionId);
    this.#pending.set(sessionId, {
      upTo: Math.max(was?.upTo ?? -1, lastSeq),
      check: check || (was?.check ?? false),
    });
    if (this.#ready) void this.#run(sessionId);
  }

  /** The sweep's counter rows: hint every session whose counter differs from its cursor, or that went. */
  reconcile(counters: Map<string, number>): void {
    if (!this.#ready) return;
    for (const [id, last] of counters) if (this.#cursors.get(id) !== last) this.hint(id, last);
    for (const id of this.#cursors.keys()) if (!counters.has(id)) this.hint(id, -1);
  }

  async #run(id: string): Promise<void> {
    if (this.#busy.has(id)) return; // The read in progress looks at the pending entry when it is done.
    this.#busy.add(id);
    try {
      for (let p = this.#pending.get(id); p && !this.stopped; p = this.#pending.get(id)) {
        this.#pending.delete(id);
        await this.#catchUp(id, p);
      }
    } catch {
      // The database is away: the sweep hints this session again while its cursor is behind.
    } finally {
      this.#busy.delete(id);
    }
  }

  async #catchUp(id: string, p: Pending): Promise<void> {
    let cursor = this.#cursors.get(id);
    let upTo = p.upTo;
    if (p.check || cursor === undefined) {
      const now = await this.#source.counter(id);
      if (this.stopped) return;
      if (now === null) {
        if (cursor !== undefined) {
          this.#cursors.delete(id);
          this.#tell({ sessionId: id, change: "deleted" });
        }
        return;
      }
      if (cursor !== undefined && now < cursor) {
        // Deleted and made anew between two looks: the new row's events start again at 1.
        this.#tell({ sessionId: id, change: "deleted" });
        cursor = undefined;
      }
      if (cursor === undefined) {
        cursor = 0;
        this.#cursors.set(id, 0);
        this.#tell({ sessionId: id, change: "created" });
      }
      upTo = Math.max(upTo, now);
    }
    for (;;) {
      const rows = await this.#source.events(id, cursor, this.#page);
      // Stopped, or the sweep saw the row go while this read was out: nothing more of this session.
      if (this.stopped || this.#cursors.get(id) !== cursor) return;
      if (rows.length) {
        this.#deliver(id, cursor, rows);
        cursor = rows.at(-1)!.seq;
        this.#cursors.set(id, cursor);
      }
      if (rows.length < this.#page && cursor >= upTo) return;
      if (!rows.length) return; // Counter ahead of the rows: a plugin-numbered gap; the sweep looks again.
    }
  }

  #deliver(sessionId: string, after: number, events: EventRow[]): void {
    try {
      this.#onEvents({ sessionId, after, events });
    } catch {
      // The handler's own failure is its business: the cursor moves on, as the events were handed over.
    }
  }

  #tell(change: Parameters<OnSessions>[0]): void {
    try {
      this.#onSessions(change);
    } catch {
      // As for events.
    }
  }
}

/** Every follower of one feed object, and the sweep they share (one counters read per period). */
export class Followers {
  #source: FeedSource;
  #sweepMs: number;
  #page: number;
  #all = new Set<Follower>();
  #timer: ReturnType<typeof setInterval> | undefined;
  #sweeping = false;
  #writtenHere: (sessionId: string) => boolean;

  /**
   * @param writtenHere whether the session's events are appended by this process, which then `advance`s the
   *   cursors itself: hints and sweeps leave it alone.
   */
  constructor(
    source: FeedSource,
    sweepMs: number,
    page: number,
    writtenHere: (sessionId: string) => boolean = () => false,
  ) {
    this.#source = source;
    this.#sweepMs = sweepMs;
    this.#page = page;
    this.#writtenHere = writtenHere;
  }

  get size(): number {
    return this.#all.size;
  }

  /** Start a follower: resolves once its cursors are taken (see `EventFeed.follow`). */
  async follow(
    onEvents: OnEvents,
    onSessions: OnSessions = () => {},
    from?: ReadonlyMap<string, number>,
  ): Promise<() => void> {
    const follower = new Follower(this.#source, onEvents, onSessions, this.#page, this.#writtenHere);
    // Hints heard from here on are kept, so none sent while the cursors are read is lost.
    this.#all.add(follower);
    try {
      await follower.start(from);
    } catch (error) {
      this.#remove(follower);
      throw error;
    }
    this.#timer ??= setInterval(() => void this.sweep(), this.#sweepMs);
    return () => this.#remove(follower);
  }

  hint(sessionId: string, lastSeq: number): void {
    for (const f of this.#all) f.hint(sessionId, lastSeq);
  }

  advance(sessionId: string, lastSeq: number): void {
    for (const f of this.#all) f.advance(sessionId, lastSeq);
  }

  /** Compare the counter rows with every follower's cursors now (also after a listener reconnected). */
  async sweep(): Promise<void> {
    if (this.#sweeping || !this.#all.size) return;
    this.#sweeping = true;
    try {
      const counters = await this.#source.counters();
      for (const f of this.#all) f.reconcile(counters);
    } catch {
      // The database is away: the next tick tries again; the rows wait in the table.
    } finally {
      this.#sweeping = false;
    }
  }

  /** Stop every follower and the sweep. */
  stop(): void {
    for (const f of [...this.#all]) this.#remove(f);
  }

  #remove(follower: Follower): void {
    follower.stopped = true;
    this.#all.delete(follower);
    if (!this.#all.size) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }
}
