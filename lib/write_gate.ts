/**
 * Whether the daemon's SQLite file takes writes, as one piece of state shared by every writer of the file
 * (ingest commits, session rows, glances, the other tables' stores). node:sqlite is synchronous: a write on a
 * file another process holds locked stops the whole event loop for the busy timeout before SQLite refuses it.
 * If each writer found that out on its own, a held lock would cost one busy timeout per writer, back to back,
 * with no turn for reads in between (15 s for a REST read, measured). Here the first refusal closes the gate
 * for a pause, every write meanwhile fails at once, and only the first write after the pause tries the file.
 * `Store` owns the one instance of its file (`store.gate`); stores given only the handle use `gateOf(db)`.
 */
import type { DatabaseSync } from "node:sqlite";

/** After SQLite refused a write for the whole file, no write is tried for this long. */
export const FAILURE_PAUSE_MS = 1000;
/** Each further refusal in a row doubles the pause, up to this: a lock held for minutes costs one wait per 10 s. */
export const MAX_FAILURE_PAUSE_MS = 10_000;

/** A write failed at once because the file refused an earlier one and the pause has not passed. */
export class WriteRefused extends Error {
  constructor(cause: Error) {
    super(`${cause.message} (paused before retrying)`, { cause });
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

  /** @param now the clock (milliseconds, monotonic); tests pass their own. */
  constructor(private readonly now: () => number = () => performance.now()) {}

  /** The refusal in force (a write now fails at once), or null when the file may be tried. */
  get refusal(): Error | null {
    return this.#cause && this.now() < this.#until ? this.#cause : null;
  }

  /** When the next write may try the file (on the `now` clock); in the past while the gate is open. */
  get retryAt(): number {
    return this.#until;
  }

  /**
   * Run a write. While the file refuses writes it throws `WriteRefused` at once; a whole-file failure of the
   * write closes the gate for the pause (doubling with each refusal in a row); a success opens it again.
   * @throws {WriteRefused} while the gate is closed; whatever `write` throws otherwise.
   */
  run<T>(write: () => T): T {
    const refusal = this.refusal;
    if (refusal) throw new WriteRefused(refusal);
    this.#depth++;
    try {
      const out = write();
      if (this.#depth === 1) {
        this.#pauseMs = FAILURE_PAUSE_MS;
        this.#cause = null;
      }
      return out;
    } catch (error) {
      if (this.#depth === 1 && wholeFileError(error) && !(error instanceof WriteRefused)) this.#refuse(error);
      throw error;
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
    this.#cause = error as Error;
    this.#until = this.now() + this.#pauseMs;
    this.#pauseMs = Math.min(2 * this.#pauseMs, MAX_FAILURE_PAUSE_MS);
  }
}

const gates = new WeakMap<DatabaseSync, WriteGate>();

/** The gate of a database handle (one per handle, shared by every store on it). */
export function gateOf(db: DatabaseSync): WriteGate {
  let gate = gates.get(db);
  if (!gate) gates.set(db, gate = new WriteGate());
  return gate;
}
