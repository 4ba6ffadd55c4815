/**
 * Whether the daemon's SQLite file takes writes, as one piece of state shared by every writer of the file
 * (ingest commits, session rows, glances, the other tables' stores). node:sqlite is synchronous: a write on a
 * file another process holds locked stops the whole event loop for the busy timeout before SQLite refuses it.
 * If each writer found that out on its own, a held lock would cost one busy timeout per writer, back to back,
 * with no turn for reads in between (15 s for a REST read, measured). Here the first refusal closes the gate:
 * every write then fails at once for a pause, and the write after the pause tries the file without waiting
 * (busy timeout 0: a held lock answers SQLITE_BUSY in microseconds), until one succeeds and the busy timeout
 * is back. A held lock, however long, costs the event loop one busy timeout in all.
 * `Store` owns the one instance of its file (`store.gate`); stores given only the handle use `gateOf(db)`.
 */
import type { DatabaseSync } from "node:sqlite";
import { UnavailableError } from "./errors.ts";

/**
 * How long a write waits for another process's lock once the daemon runs (`PRAGMA busy_timeout`; the open
 * waits longer, see lib/store_file.ts). node:sqlite is synchronous, so the whole event loop — every socket,
 * every read — waits with it: at 5 s a REST read waited 5 s per writer. The daemon is the file's only writer; another
 * process takes the write lock only for a tool's short transaction (the token CLI, a sqlite3 shell:
 * milliseconds), which 500 ms still absorbs without refusing anything, while a lock held longer is not going
 * away soon. With the gate that is also the slowest a read gets while the file is locked: ~500 ms, once.
 */
export const BUSY_TIMEOUT_MS = 500;
/**
 * After SQLite refused a write for the whole file, writes fail at once for this long, and then one is tried.
 * Tries cost little (no waiting while the gate is closed), so the pause only spares a full disk the work of
 * a doomed transaction per commit, and the log a line per writer.
 */
export const FAILURE_PAUSE_MS = 250;
/** Each further refusal in a row doubles the pause, up to this: writes resume at most 2 s after the file does. */
export const MAX_FAILURE_PAUSE_MS = 2000;
/** In the message of a write refused without waiting (the gate was closed): what the fault harness counts. */
export const REFUSED_AT_ONCE = "refused at once: the file refuses writes";

/**
 * A write failed without waiting because the file refused an earlier one: the store is unavailable for now, so
 * a REST write that meets it answers 503, not 500.
 */
export class WriteRefused extends UnavailableError {
  constructor(cause: Error) {
    super(`${cause.message} (${REFUSED_AT_ONCE})`, { cause });
    this.name = "WriteRefused";
  }
}

/** True for SQLite failures of the whole file (not of one session's rows), as node:sqlite words them. */
export function wholeFileError(error: unknown): boolean {
  return error instanceof WriteRefused ||
    /database or disk is full|database is locked|disk I\/O error|readonly database/.test(
      (error as Error)?.message ?? "",
    );
}

/** The writes of one SQLite file, refused at once while the file refuses them. */
export class WriteGate {
  #until = 0;
  #pauseMs = FAILURE_PAUSE_MS;
  #cause: Error | null = null;
  /** Writes running now: a write nested in another (a table's save inside a transaction) counts once. */
  #depth = 0;
  #busyTimeout: (ms: number) => void;
  #now: () => number;

  /**
   * @param busyTimeout sets the file's busy timeout (ms): `BUSY_TIMEOUT_MS` while open, 0 while closed
   * @param now the clock (milliseconds, monotonic); tests pass their own.
   */
  constructor(
    busyTimeout: (ms: number) => void = () => {},
    now: () => number = () => performance.now(),
  ) {
    this.#busyTimeout = busyTimeout;
    this.#now = now;
  }

  /** The refusal in force (a write now fails at once), or null when the file may be tried. */
  get refusal(): Error | null {
    return this.#cause && this.#now() < this.#until ? this.#cause : null;
  }

  /** When the next write may try the file (on the `now` clock); in the past while the gate is open. */
  get retryAt(): number {
    return this.#until;
  }

  /**
   * Run a write. While the file refuses writes it throws `WriteRefused` at once; after the pause the write is
   * tried without waiting for a lock. A whole-file failure closes the gate for the pause (doubling with each
   * refusal in a row); a success opens it again, with the busy timeout back.
   * @throws {WriteRefused} while the gate is closed; whatever `write` throws otherwise.
   */
  run<T>(write: () => T): T {
    const refusal = this.refusal;
    if (refusal) throw new WriteRefused(refusal);
    const closed = this.#cause !== null;
    this.#depth++;
    try {
      const out = write();
      if (this.#depth === 1 && closed) {
        this.#pauseMs = FAILURE_PAUSE_MS;
        this.#cause = null;
        this.#busyTimeout(BUSY_TIMEOUT_MS);
      }
      return out;
    } catch (error) {
      if (this.#depth > 1 || !wholeFileError(error) || error instanceof WriteRefused) throw error;
      this.#refuse(error);
      // A try while closed did not wait: say so, as for the writes refused during the pause.
      throw closed ? new WriteRefused(error as Error) : error;
    } finally {
      this.#depth--;
    }
  }

  /** As `run`, for writes whose loss costs nothing lasting (a token's last use): false when not written. */
  tryRun(write: () => void): boolean {
    try {
      this.run(write);
      return true;
    } catch (error) {
      if (wholeFileError(error)) return false;
      throw error;
    }
  }

  #refuse(error: unknown): void {
    if (this.#cause === null) this.#busyTimeout(0);
    this.#cause = error as Error;
    this.#until = this.#now() + this.#pauseMs;
    this.#pauseMs = Math.min(2 * this.#pauseMs, MAX_FAILURE_PAUSE_MS);
  }
}

const gates = new WeakMap<DatabaseSync, WriteGate>();

/** The gate of a database handle (one per handle, shared by every store on it). */
export function gateOf(db: DatabaseSync): WriteGate {
  let gate = gates.get(db);
  if (!gate) gates.set(db, gate = new WriteGate((ms) => db.exec(`PRAGMA busy_timeout=${ms}`)));
  return gate;
}
