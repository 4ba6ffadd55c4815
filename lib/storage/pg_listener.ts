/**
 * A LISTEN on a dedicated connection that keeps hearing, shared by every PostgreSQL part that is woken by
 * NOTIFY hints (the command queue, the event feed). NOTIFY is lossy, so the owner always has a sweep; this
 * module only keeps the listener alive and tells the owner when hints may have been lost:
 * - the driver re-LISTENs by itself, with backoff, after the connection closes (a killed backend, a server
 *   restart); every (re)LISTEN calls `onListen`, when the owner sweeps for what was sent in the gap;
 * - a connection gone silent without closing (a dropped NAT or load balancer entry sends no reset, and TCP
 *   keepalive takes minutes to notice) is caught by a watchdog: the listener NOTIFYs an empty ping on its own
 *   channel every `pingMs` while `active()`, and one that heard nothing for three periods is built anew.
 */
import { type ConnectOptions, connectPostgres, type Sql } from "./pg_client.ts";
import type { Watches } from "./looks.ts";
import type { Wakeups } from "./command_queue.ts";

/** The watchdog's ping period unless an owner's options say otherwise. */
export const LISTENER_PING_MS = 5_000;

/** Opens, each time it is called, the one-connection client a listener on `url` LISTENs through. */
export function listenerClient(url: string, options: ConnectOptions = {}): () => Sql {
  return () => connectPostgres(url, { max: 1, connectTimeout: options.connectTimeout });
}

export interface PgListenerOptions {
  /** The NOTIFY channel. */
  channel: string;
  /** Opens the client whose one connection LISTENs; never a shared pool, whose connections come and go. */
  connect: () => Sql;
  /** The pool the pings are sent through. */
  pool: Sql;
  /** A hint's payload (never the empty ping). */
  onHint: (payload: string) => void;
  /** Listening (again): hints sent before this may have been lost. */
  onListen: () => void;
  /** Whether anyone waits for hints: no pings, and no verdict on the silence, otherwise. */
  active: () => boolean;
  /** Watchdog ping period (ms). */
  pingMs: number;
}

/** One channel's listener with its watchdog; `start()` once, `close()` at the end. */
export class PgListener {
  #o: PgListenerOptions;
  #client: Sql | null = null;
  #heardAt = 0;
  /** The LISTEN being made, awaited by `close()`. */
  #listening: Promise<void> = Promise.resolve();
  #watchdog: ReturnType<typeof setInterval> | undefined;
  #closed = false;

  constructor(options: PgListenerOptions) {
    this.#o = options;
  }

  /**
   * Listen now (a no-op when already started or closed).
   * @returns once the LISTEN is in place (or failed: the driver and the watchdog then keep trying).
   */
  start(): Promise<void> {
    if (this.#watchdog || this.#closed) return this.#listening;
    this.#heardAt = Date.now();
    this.#listening = this.#listen();
    this.#watchdog = setInterval(() => void this.#check(), this.#o.pingMs);
    return this.#listening;
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#watchdog);
    this.#watchdog = undefined;
    const client = this.#client;
    this.#client = null;
    await client?.end({ timeout: 0 }).catch(() => {});
    await this.#listening;
  }

  /** LISTEN on a fresh dedicated connection; a failure is left to the watchdog. */
  async #listen(): Promise<void> {
    const client = this.#client = this.#o.connect();
    try {
      await client.listen(this.#o.channel, (payload) => {
        this.#heardAt = Date.now();
        if (payload) this.#o.onHint(payload);
      }, () => {
        this.#heardAt = Date.now();
        this.#o.onListen();
      });
    } catch {
      // The server is away: the driver retries, and the watchdog builds a new listener if that stays deaf.
    }
  }

  async #check(): Promise<void> {
    if (this.#closed) return;
    if (!this.#o.active()) {
      // Nobody to wake, so no pings: the silence that follows says nothing about the listener.
      this.#heardAt = Date.now();
      return;
    }
    if (Date.now() - this.#heardAt > 3 * this.#o.pingMs) {
      const old = this.#client;
      this.#heardAt = Date.now();
      await old?.end({ timeout: 0 }).catch(() => {});
      if (this.#closed) return;
      await (this.#listening = this.#listen());
      return;
    }
    // Every replica hears every ping: a listener that hears none is deaf, whoever sent them.
    await this.#o.pool`SELECT pg_notify(${this.#o.channel}, '')`.catch(() => {});
  }
}

/** A listener whose every hint and (re)LISTEN makes each of `watches` look; it pings while any is there. */
export function watchesListener(
  watches: Watches<{ look(): Promise<void>; stop(): void }>,
  options: Omit<PgListenerOptions, "onHint" | "onListen" | "active">,
): PgListener {
  const lookAll = () => watches.lookAll();
  return new PgListener({ ...options, onHint: lookAll, onListen: lookAll, active: () => watches.size > 0 });
}

/** A listener hinting each payload to `wakeups`, which sweep at each (re)LISTEN; it pings while any wait. */
export function wakeupsListener(
  wakeups: Wakeups,
  options: Omit<PgListenerOptions, "onHint" | "onListen" | "active">,
): PgListener {
  return new PgListener({
    ...options,
    onHint: (sessionId) => wakeups.hint(sessionId),
    onListen: () => void wakeups.sweep(),
    active: () => wakeups.size > 0,
  });
}
