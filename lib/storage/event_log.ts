/**
 * The event log behind one async interface, so that the daemon can keep it in SQLite (one daemon, the embedded
 * default) or in PostgreSQL (several replicas on one database). Both implementations pass the same contract
 * (tests/process/event_log_contract_test.ts).
 *
 * Ordering: each session has a counter row. An append locks it, numbers the batch from it and moves it on, all
 * inside the transaction that inserts the rows, so commits of one session are in seq order and a reader that
 * follows `seq > cursor` never skips a row (a database sequence would let seq 2 commit before seq 1).
 *
 * Fencing: one writer (the *holder*) per session. `claimHolder` bumps the session's epoch; an append carries the
 * epoch its writer claimed and is refused once a newer holder took over, even when the old one was cut off from
 * the database while the takeover happened and only comes back afterwards.
 */
import type { AgentEvent, SessionInfo } from "../protocol.ts";
import type { EventRow } from "../event_codec.ts";
import type { EventsPage, SessionCommit } from "../store.ts";
import { ConflictError, InvalidError } from "../errors.ts";

export type { EventRow } from "../event_codec.ts";
export type { EventsPage, SessionCommit } from "../store.ts";

/** Where a session's log stands. */
export interface LoggedSession {
  id: string;
  lastSeq: number;
  /** The ts of its latest event, null before any. */
  lastEventAt: number | null;
}

/** What an append needs besides its events. */
export interface AppendOptions {
  /** The epoch the writer got from `claimHolder` (0 for a session nobody claimed yet). */
  epoch: number;
}

/** The event log of every session. */
export interface EventLog {
  /** Which database holds it. */
  readonly kind: "sqlite" | "postgres";
  /** Create a session's row (with its counter at 0) when it does not exist; an existing one is left alone. */
  ensureSession(info: SessionInfo): Promise<void>;
  /**
   * Become the session's holder: bump its epoch and return it. Appends carrying an older epoch fail from now on.
   * @throws {NotFoundError} for an unknown session.
   */
  claimHolder(sessionId: string, replicaId: string): Promise<number>;
  /**
   * Store a batch of one session's events in one transaction. An event with `seq ≥ 1` keeps it (the plugin
   * numbers its events; a seq already stored is a replay and is left out); `seq: 0` takes the next number of
   * the session's counter.
   * @returns what changed; `inserted` in the order stored, replays left out.
   * @throws {FencedError} when a newer holder claimed the session; nothing is then stored.
   * @throws {NotFoundError} for an unknown session.
   * @throws {InvalidError} for an event of another session or a negative or fractional seq.
   */
  append(sessionId: string, events: readonly AgentEvent[], options: AppendOptions): Promise<SessionCommit>;
  /** A page of a session's stored events, seq ascending (see `EventsPage`). */
  events(sessionId: string, page: EventsPage): Promise<EventRow[]>;
  /** The session's highest stored seq, 0 when it has none or is unknown. */
  lastSeq(sessionId: string): Promise<number>;
  /** Every session with a row, most recent event first. */
  sessions(): Promise<LoggedSession[]>;
  /**
   * Remove a session's row and its whole log.
   * @returns false when there was no such session.
   */
  deleteSession(sessionId: string): Promise<boolean>;
  /** Release the connection(s); the log is unusable afterwards. */
  close(): Promise<void>;
}

/** An append refused because a newer holder claimed the session: this writer must stop and drop its socket. */
export class FencedError extends ConflictError {
  override name = "FencedError";
  constructor(readonly sessionId: string, readonly epoch: number, readonly current: number) {
    super(
      `Session "${sessionId}" is held by a newer holder (epoch ${current}); this writer's epoch ${epoch} is fenced`,
    );
  }
}

/**
 * A number read from a 64-bit column (drivers hand `bigint` over as a string or a BigInt): as a JS number,
 * refused past 2^53 rather than silently rounded.
 * @throws {RangeError} when the value is not a safe integer.
 */
export function safeInteger(value: unknown): number {
  const n = typeof value === "number" ? value : Number(value);
  if (!Number.isSafeInteger(n)) throw new RangeError(`Stored integer ${String(value)} is past 2^53`);
  return n;
}

/** The checks both logs make on an event before storing it. */
export function checkEvent(sessionId: string, event: AgentEvent): void {
  if (event.sessionId !== sessionId) {
    throw new InvalidError(`Event of session "${event.sessionId}" appended to session "${sessionId}"`);
  }
  if (!Number.isSafeInteger(event.seq) || event.seq < 0) {
    throw new InvalidError(`Event seq ${event.seq} is not a whole number ≥ 0`);
  }
}
