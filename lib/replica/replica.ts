/**
 * This daemon as one replica of several on one PostgreSQL database (`LVMH_DATABASE_URL`). PostgreSQL holds
 * the truth of sessions, events and commands; this file is where a replica meets it:
 *
 * - **Holding.** A plugin's `hello` claims its session (`claimHolder`: a new epoch). This replica then appends
 *   the session's events with that epoch; once another replica claimed it, an append or a take fails with
 *   `FencedError` and the socket here is closed, so a holder cut off from the others cannot write after the
 *   takeover.
 * - **Appending.** An append commits in PostgreSQL first (that is what the plugin's ack means), then the
 *   replica's own copy (lib/replica/mirror.ts) stores it and the feed announces it to the other replicas.
 * - **Commands.** Whatever replica a person uses, a command goes into the shared queue, in the order it was
 *   sent from this replica, and the holder takes it, writes it to the plugin and acknowledges it.
 * - **Live deltas.** The holder's streaming deltas, never stored, go to the other replicas on a lossy channel
 *   (lib/storage/pg_live_channel.ts); each holds a delta until its copy has the stored events before it.
 */
import type { AgentEvent, AskSet, SessionInfo } from "../protocol.ts";
import { NotFoundError } from "../errors.ts";
import type { SharedDatabase } from "../storage/open.ts";
import { PgEventLog } from "../storage/pg_event_log.ts";
import { PgEventFeed } from "../storage/pg_event_feed.ts";
import { PgCommandQueue } from "../storage/pg_command_queue.ts";
import { type CommandFrame, FencedError } from "../storage/command_queue.ts";
import { PgReplicas } from "../storage/pg_replicas.ts";
import { Holders } from "./holders.ts";
import type { EncodedEvent } from "../event_codec.ts";
import { PgLiveChannel } from "../storage/pg_live_channel.ts";
import { LiveOrder } from "../storage/live_order.ts";
import type { LiveDelta } from "../storage/live_channel.ts";

export { FencedError };

/** How long a write the database did not take (a command to queue, a claim to end) is tried again. */
export const RETRY_FOR_MS = 30_000;
const RETRY_EVERY_MS = 250;

/** What a hello on this replica found in the shared database. */
export interface Claimed {
  epoch: number;
  /** The session's highest stored seq: `welcome.lastSeq`. */
  lastSeq: number;
  /** The session's own ask set, null for the daemon's default. */
  ask: AskSet | null;
}

/** What the replica asks of the session registry. */
export interface ReplicaDeps {
  /** Write a command to the session's plugin socket on this replica; false when it has none. */
  deliver(frame: CommandFrame): boolean;
  /** This replica's socket of the session lost its claim (a newer holder): close it. */
  fenced(sessionId: string): void;
  /** Sessions whose holder on another replica came or went (their online state). */
  heldElsewhereChanged(sessionIds: string[]): void;
  /** Hand another replica's live delta to the browsers here, after the stored event `after`. */
  releaseLive(sessionId: string, json: string, after: number): void;
  /** The highest seq of the session this replica's copy stored and published (-1 for one it does not know). */
  cursor(sessionId: string): number;
}

/** This daemon's part in a deployment of several replicas. */
export class Replica {
  readonly id: string;
  readonly log: PgEventLog;
  readonly feed: PgEventFeed;
  readonly queue: PgCommandQueue;
  readonly live: PgLiveChannel;
  #order: LiveOrder | null = null;
  #db: SharedDatabase;
  #rows: PgReplicas;
  #holders: Holders;
  #deps: ReplicaDeps | null = null;
  /** The sessions this replica holds, with their epoch. */
  #epochs = new Map<string, number>();
  /** Sessions held here whose commits this replica's file failed to store: the feed reads them back. */
  #readBack = new Set<string>();
  /** The epoch each of those sessions' claim got (what its socket knows; `#renew` may have moved it on). */
  #claimed = new Map<string, number>();
  /** Per session, the command enqueued last from here: the next waits for it, so they queue in send order. */
  #sending = new Map<string, Promise<void>>();
  /** Per held session, the take in progress (one at a time keeps the frames in queue order). */
  #taking = new Map<string, Promise<void>>();
  #again = new Set<string>();
  /** Releases of claims still being written (a clean stop waits for them). */
  #releasing = new Set<Promise<void>>();
  #unsubscribe: (() => void) | null = null;
  #closed = false;

  constructor(db: SharedDatabase, id: string) {
    this.#db = db;
    this.id = id;
    this.log = new PgEventLog(db.sql);
    // The sessions it holds it appends itself, and moves its copy's cursor past (`Mirror`'s `copied`); one
    // another replica took over is followed again as soon as the holders' rows say so, fenced here or not yet.
    this.feed = new PgEventFeed(db.sql, db.listen, {
      writtenHere: (id) =>
        this.#epochs.has(id) && !this.#readBack.has(id) && !this.#holders.heldElsewhere(id),
    });
    this.queue = new PgCommandQueue(db.sql, db.listen);
    this.live = new PgLiveChannel(db.sql, db.listen);
    this.#rows = new PgReplicas(db.sql);
    this.#holders = new Holders(this.#rows, id, (ids) => this.#deps?.heldElsewhereChanged(ids));
  }

  /** The shared database, for the owners of the other kinds of state to open their logs on. */
  get db(): SharedDatabase {
    return this.#db;
  }

  /** Start beating, reading the holders and taking commands. */
  async start(deps: ReplicaDeps): Promise<void> {
    this.#deps = deps;
    await this.#holders.start();
    const order = new LiveOrder(deps.releaseLive, deps.cursor);
    this.#order = order;
    const unlisten = this.live.subscribe((delta) => order.offer(delta));
    const untake = this.queue.subscribe((sessionId) => this.take(sessionId));
    this.#unsubscribe = () => {
      unlisten();
      untake();
      order.close();
    };
  }

  /** Send a held session's live deltas (each after the stored event `after`) to the other replicas. */
  publishLive(sessionId: string, after: number, events: readonly EncodedEvent[]): void {
    for (const e of events) this.live.publish({ sessionId, after, json: e.json });
  }

  /** Held live deltas that belong among stored events `after < seq ≤ lastSeq` about to be published. */
  deltasWithin(sessionId: string, after: number, lastSeq: number): LiveDelta[] {
    return this.#order?.within(sessionId, after, lastSeq) ?? [];
  }

  /** This replica's copy stored and published the session's events: deltas waiting for them may go. */
  advanced(sessionId: string): void {
    this.#order?.advanced(sessionId);
  }

  /** True when a live replica other than this one holds the session's socket. */
  heldElsewhere(sessionId: string): boolean {
    return this.#holders.heldElsewhere(sessionId);
  }

  /** True when this replica holds the session. */
  holds(sessionId: string): boolean {
    return this.#epochs.has(sessionId);
  }

  /**
   * A plugin said hello here: make its session's row, claim it, and read where its log stands.
   * @param notAfter this process's clock (ms epoch) past which the claim must not be made.
   * @throws {Error} when the claim could not be made before `notAfter`; nothing was changed.
   */
  async claim(info: SessionInfo, notAfter: number): Promise<Claimed> {
    await this.log.ensureSession(info);
    const epoch = await this.#rows.claim(info.id, this.id, notAfter + this.#holders.clockOffset);
    if (epoch === null) throw new Error("the claim reached the database too late");
    this.#epochs.set(info.id, epoch);
    this.#readBack.delete(info.id); // the claim's catch-up brings the copy up to the shared log
    this.#claimed.set(info.id, epoch);
    const row = await this.#rows.setInfo(info);
    return { epoch, lastSeq: row?.lastSeq ?? 0, ask: row?.ask ?? null };
  }

  /** The session's socket here went: release the claim unless a newer hello (here or elsewhere) made one. */
  release(sessionId: string, claimed: number): void {
    if (this.#claimed.get(sessionId) !== claimed) return;
    this.#claimed.delete(sessionId);
    const epoch = this.#epochs.get(sessionId);
    this.#epochs.delete(sessionId);
    if (epoch === undefined) return; // fenced meanwhile: the row names another holder
    // While the row names this replica, the others list the session online; given up, it stops counting when
    // this replica's heartbeat goes stale.
    const writing = this.#retried(
      () => this.#holders.release(sessionId, epoch),
      `${sessionId}: claim not released`,
    );
    this.#releasing.add(writing);
    void writing.finally(() => this.#releasing.delete(writing));
  }

  /**
   * Store a held session's events in the shared log and announce them.
   * @throws {FencedError} when another replica claimed the session (or this one no longer holds it).
   */
  async append(sessionId: string, events: readonly AgentEvent[]): Promise<{ lastSeq: number }> {
    const epoch = this.#epochs.get(sessionId);
    if (epoch === undefined) throw new FencedError(sessionId, -1, -1);
    try {
      const commit = await this.log.appendCounted(sessionId, events, { epoch });
      if (commit.inserted) {
        // The deltas published before these events go out first: hinted earlier, the events were read on
        // another replica before its deltas came, which it then dropped as stale (seen under load).
        const announce = () => this.feed.announce({ sessionId, lastSeq: commit.lastSeq });
        const deltas = this.live.sending();
        if (deltas) void deltas.then(announce);
        else announce();
      }
      return commit;
    } catch (error) {
      if (error instanceof FencedError && this.#epochs.get(sessionId) === epoch) {
        this.#epochs.delete(sessionId);
      }
      throw error;
    }
  }

  /** This replica's file has a held session's events up to `lastSeq`: the feed need not read them back. */
  copied(sessionId: string, lastSeq: number): void {
    if (!this.#readBack.has(sessionId)) this.feed.advance(sessionId, lastSeq);
  }

  /**
   * A held session's commit could not be stored in this file: until a new claim, its feed reads every commit
   * back from the cursor before the gap (the file ignores what it has), so the gap is filled, not skipped.
   */
  notCopied(sessionId: string): void {
    this.#readBack.add(sessionId);
  }

  /** Store a session's own ask set in the shared row (every replica's welcome reads it from there). */
  setAsk(sessionId: string, ask: AskSet): Promise<void> {
    return this.#rows.setAsk(sessionId, ask);
  }

  /** A spawned session's row and ask set, made before its worker may say hello here or elsewhere. */
  async register(info: SessionInfo, ask: AskSet): Promise<void> {
    await this.log.ensureSession(info);
    await this.#rows.setAsk(info.id, ask);
  }

  /** Record what the plugin of a session held here supports, for the replicas that prompt it (kept hooks). */
  async setFeatures(sessionId: string, features: string[]): Promise<void> {
    const epoch = this.#epochs.get(sessionId);
    if (epoch !== undefined) await this.#rows.setFeatures(sessionId, this.id, epoch, features);
  }

  /** What the session's holder's plugin supports (null: not known yet), and the holder's epoch. */
  features(sessionId: string): Promise<{ features: string[] | null; epoch: number } | null> {
    return this.#rows.features(sessionId);
  }

  /** A session's snapshot as the shared row has it. */
  info(sessionId: string): Promise<SessionInfo | null> {
    return this.#rows.info(sessionId);
  }

  /** Delete a session from the shared database and tell the other replicas. */
  async deleteSession(sessionId: string): Promise<void> {
    if (await this.log.deleteSession(sessionId)) this.feed.announceDeleted(sessionId);
  }

  /**
   * Queue a command for the session's holder, after every command sent from here before it. Never throws:
   * while the database is away it is tried again for `RETRY_FOR_MS`, then given up with a log line.
   * @param options.ifHeld queue it only when some replica holds the session (this replica's view of the
   *   others lags their claims by up to a poll): a command for a session nobody holds is dropped, as one for
   *   an offline session is on a single daemon.
   */
  send(frame: CommandFrame, options: { ifHeld?: boolean } = {}): void {
    const id = frame.sessionId;
    const enqueue = async () => {
      if (options.ifHeld && !this.#epochs.has(id) && !(await this.#rows.held(id))) return;
      await this.queue.enqueue(id, frame);
    };
    const next = (this.#sending.get(id) ?? Promise.resolve()).then(() =>
      this.#retried(enqueue, `${frame.sessionId}: ${frame.type} not queued`)
    );
    this.#sending.set(id, next);
    void next.finally(() => {
      if (this.#sending.get(id) === next) this.#sending.delete(id);
    });
  }

  /** Hand the session's waiting commands to its socket here (after a hint, and right after the welcome). */
  take(sessionId: string): void {
    if (!this.#epochs.has(sessionId) || this.#closed) return;
    if (this.#taking.has(sessionId)) {
      this.#again.add(sessionId); // the take in progress looks again when done
      return;
    }
    const run = this.#takeAll(sessionId).finally(() => {
      this.#taking.delete(sessionId);
      if (this.#again.delete(sessionId)) this.take(sessionId);
    });
    this.#taking.set(sessionId, run);
  }

  /** Stop taking, beating and following; wait for commands being queued; release the database. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#unsubscribe?.();
    // A clean stop says so at once: its claims and its heartbeat go, so no replica (nor this one started
    // again) lists its sessions online until the heartbeat would have gone stale.
    const claims = [...this.#epochs].map(([id, epoch]) => this.#holders.release(id, epoch).catch(() => {}));
    this.#epochs.clear();
    this.#claimed.clear();
    await Promise.allSettled([...claims, ...this.#releasing]);
    this.#closed = true;
    await this.#holders.stop();
    await Promise.allSettled([...this.#sending.values(), ...this.#taking.values()]);
    await Promise.allSettled([this.feed.close(), this.queue.close(), this.live.close(), this.log.close()]);
    await this.#db.close();
  }

  /** Run `write` until it succeeds, for `RETRY_FOR_MS` at most (not past an unknown session); never throws. */
  async #retried(write: () => Promise<unknown>, failure: string): Promise<void> {
    const deadline = Date.now() + RETRY_FOR_MS;
    for (;;) {
      try {
        await write();
        return;
      } catch (error) {
        if (error instanceof NotFoundError || Date.now() > deadline || this.#closed) {
          console.error(`lvmh: session ${failure}: ${(error as Error).message}`);
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, RETRY_EVERY_MS));
      }
    }
  }

  /**
   * A take or an ack failed without an answer (the database went away): the commands it may have handed to
   * this epoch would never be handed out again in it, so the session moves to a new epoch, if still ours, and
   * takes again; what the old epoch took unacknowledged then comes again. Appends still carrying the old
   * epoch are refused, which closes the socket; the plugin's replay repairs that.
   */
  #renew(sessionId: string, epoch: number): void {
    void this.#retried(async () => {
      if (this.#epochs.get(sessionId) !== epoch || this.#closed) return;
      const next = await this.#rows.renew(sessionId, this.id, epoch);
      if (this.#epochs.get(sessionId) !== epoch) return;
      if (next === null) {
        this.#epochs.delete(sessionId);
        this.#deps?.fenced(sessionId);
        return;
      }
      this.#epochs.set(sessionId, next);
      this.take(sessionId);
    }, `${sessionId}: commands not taken again`);
  }

  async #takeAll(sessionId: string): Promise<void> {
    for (;;) {
      const epoch = this.#epochs.get(sessionId);
      if (epoch === undefined || this.#closed) return;
      try {
        const taken = await this.queue.take(sessionId, { epoch });
        if (!taken.length) return;
        const delivered: number[] = [];
        for (const command of taken) {
          if (!this.#deps?.deliver(command.frame)) break; // the socket went: the rest waits for the next holder
          delivered.push(command.pos);
        }
        if (delivered.length) await this.queue.ack(sessionId, { epoch }, delivered);
        if (delivered.length < taken.length) return;
      } catch (error) {
        if (!(error instanceof FencedError)) return this.#renew(sessionId, epoch);
        // Only the socket of the fenced epoch goes: a newer claim made here meanwhile has a socket of its own.
        if (this.#epochs.get(sessionId) === epoch) {
          this.#epochs.delete(sessionId);
          this.#deps?.fenced(sessionId);
        }
        return;
      }
    }
  }
}
