/**
 * Which replica leads the deployment's once-only background jobs (retention, the sweep of session storage
 * nobody knows, the daily cap's and budgets' announcements): the one holding a PostgreSQL advisory lock on a
 * connection of its own. The lock is the connection's: when the leader's process dies, its connection ends
 * (a SIGKILL, `pg_terminate_backend`, a server restart) and the server drops the lock, so another replica's
 * next try takes it.
 *
 * Each round (every `LEADER_CHECK_MS`) a follower tries the lock; the leader checks that the connection it
 * answers on still holds it. The driver opens a new connection after one died, without the lock: that check
 * is how a leader learns it lost. A check that fails or takes longer than two rounds steps down too, so a
 * leader cut off from the database stops leading within about three rounds; it cannot know whether another
 * replica took over, so a job it leads must be safe to run twice around a takeover (each is: a retention
 * delete or a sweep that finds nothing to do is a no-op).
 *
 * On SQLite there is one daemon: `ALWAYS_LEADER` leads from the start and never changes.
 */
import type { Sql } from "../storage/pg_client.ts";

/** How often a follower tries the lock and the leader checks it holds it. */
export const LEADER_CHECK_MS = 1_000;
/**
 * The lock's two keys: "lvmh" in ASCII (as the migration lock, which takes the one-key form, so the two never
 * meet) and 1 for leadership.
 */
export const LEADER_LOCK: readonly [number, number] = [0x6c766d68, 1];

/** What the daemon's once-only jobs ask of leadership. */
export interface Leading {
  /** True while this replica leads. */
  isLeader(): boolean;
  /** Hear each change (true: this replica leads now). @returns the removal */
  onChange(listener: (leading: boolean) => void): () => void;
  /** Stop leading (the lock goes with the connection) and trying. */
  close(): Promise<void>;
}

/** A single daemon on SQLite: it leads, always. */
export const ALWAYS_LEADER: Leading = {
  isLeader: () => true,
  onChange: () => () => {},
  close: () => Promise.resolve(),
};

export interface LeadershipOptions {
  /** Round length (tests shorten it). */
  checkMs?: number;
  /** Told of failures to reach the database (the daemon's log); silent without it. */
  log?(line: string): void;
}

/** Leadership among replicas by an advisory lock on a dedicated connection. */
export class Leadership implements Leading {
  #connect: () => Sql;
  #sql: Sql | null = null;
  #checkMs: number;
  #log: (line: string) => void;
  #leading = false;
  #listeners = new Set<(leading: boolean) => void>();
  #timer: ReturnType<typeof setInterval> | undefined;
  #round: Promise<void> | null = null;
  #closed = false;

  /** @param connect opens a one-connection client (the shared database's `listen`) */
  constructor(connect: () => Sql, options: LeadershipOptions = {}) {
    this.#connect = connect;
    this.#checkMs = options.checkMs ?? LEADER_CHECK_MS;
    this.#log = options.log ?? (() => {});
  }

  /** Try once (a lone replica leads when this resolves), then every round. Never throws. */
  async start(): Promise<void> {
    if (this.#timer !== undefined || this.#closed) return;
    await this.check();
    this.#timer = setInterval(() => void this.check(), this.#checkMs);
  }

  isLeader(): boolean {
    return this.#leading;
  }

  onChange(listener: (leading: boolean) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** One round now: take the lock as a follower, or make sure it is still held as the leader. */
  check(): Promise<void> {
    this.#round ??= this.#check().finally(() => this.#round = null);
    return this.#round;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#timer);
    await this.#round;
    this.#set(false);
    // Ending the connection releases the lock at once: another replica leads at its next round.
    await this.#sql?.end({ timeout: 1 }).catch(() => {});
    this.#sql = null;
  }

  async #check(): Promise<void> {
    if (this.#closed) return;
    this.#sql ??= this.#connect();
    const sql = this.#sql;
    const [k1, k2] = LEADER_LOCK;
    try {
      const query = this.#leading
        ? sql`SELECT count(*)::int AS held FROM pg_locks WHERE locktype = 'advisory' AND granted
            AND pid = pg_backend_pid() AND classid = ${k1} AND objid = ${k2} AND objsubid = 2`
        : sql`SELECT pg_try_advisory_lock(${k1}::int, ${k2}::int)::int AS held`;
      const [row] = await within(query, 2 * this.#checkMs);
      if (this.#closed) return;
      this.#set(row.held > 0);
    } catch (error) {
      if (this.#closed) return;
      if (this.#leading) this.#log(`lvmh: stepped down as leader: ${(error as Error).message}`);
      this.#set(false);
      // A connection that does not answer may still hold the lock on the server: drop it, so the next round
      // starts on a new one and the server frees the lock once it sees this one gone.
      this.#sql = null;
      void sql.end({ timeout: 0 }).catch(() => {});
    }
  }

  #set(leading: boolean): void {
    if (leading === this.#leading) return;
    this.#leading = leading;
    for (const listener of [...this.#listeners]) {
      try {
        listener(leading);
      } catch (error) {
        console.error(`lvmh: a leadership listener failed: ${(error as Error).message}`);
      }
    }
  }
}

/** The query's rows, or a rejection once `ms` passed without them. */
async function within<T>(query: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the database did not answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([query, late]);
  } finally {
    clearTimeout(timer);
    query.then(() => {}, () => {}); // a late failure is not unhandled
  }
}
