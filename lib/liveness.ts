/**
 * The dead-peer check of plugin sockets whose plugin keeps its own heartbeat, with one timer for all of them.
 *
 * Deno's `idleTimeout` pings each socket on a timer of its own and re-arms that timer on every frame the socket
 * brings: at 3,000 plugin sockets, ~670 pings and their pongs a second and two timer operations per frame, on
 * the loop every delta waits for. Yet every lvmh plugin already sends the application `ping` (to notice a dead
 * daemon). A plugin that promises it on its upgrade request (`x-lvmh-heartbeat: <its ping interval in ms>`, at
 * most 5,000) is not pinged: any frame from it marks it alive, one sweep a second counts how many sweeps it
 * stayed silent, and after SILENT_SWEEPS it is dead (11–12 s after its last frame: a paused or unplugged
 * plugin is offline within the 13.5 s PROTOCOL.md promises). Sweeps are counted rather than a clock read, so a
 * pause of the daemon itself (SIGSTOP, a long stall) costs no peer its socket: while no sweep runs, the peers'
 * frames wait unread in the kernel, and they are read before the silence can add up again.
 */

import { HEARTBEAT_HEADER, MAX_PROMISED_PING_MS } from "./wire.ts";

/** How often the silence is counted. */
export const SWEEP_MS = 1_000;
/** Sweeps without a frame after which a socket is dead. */
export const SILENT_SWEEPS = 12;
/** The reason of the close that follows. */
export const SILENCE_REASON = `no frame for ${(SILENT_SWEEPS * SWEEP_MS) / 1000} s`;

/**
 * Whether the upgrade request promises a heartbeat this check can rely on: a whole number of ms from 1 to
 * MAX_PROMISED_PING_MS (a live plugin is then silent for at most ~5 sweeps). Anything else leaves the socket
 * to Deno's pings.
 */
export function promisesHeartbeat(headers: Headers): boolean {
  const value = headers.get(HEARTBEAT_HEADER);
  if (value === null || !/^[1-9][0-9]{0,3}$/.test(value)) return false;
  return Number(value) <= MAX_PROMISED_PING_MS;
}

/** One watched socket: `heard()` on each frame it brings, `stop()` once it closed. */
export interface Beat {
  heard(): void;
  stop(): void;
}

interface Watched {
  /** The sweep count when the socket was last heard. */
  at: number;
  dead: () => void;
}

/** Every watched socket, and the one timer that sweeps them while there is any. */
export class Liveness {
  #watched = new Set<Watched>();
  #sweeps = 0;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #sweepMs: number;
  #silentSweeps: number;

  /** Tests shorten the sweep. */
  constructor(options: { sweepMs?: number; silentSweeps?: number } = {}) {
    this.#sweepMs = options.sweepMs ?? SWEEP_MS;
    this.#silentSweeps = options.silentSweeps ?? SILENT_SWEEPS;
  }

  /** Watch one socket; `dead` is called once, from a sweep, when it stayed silent too long. */
  watch(dead: () => void): Beat {
    const watched: Watched = { at: this.#sweeps, dead };
    this.#watched.add(watched);
    this.#arm();
    return {
      heard: () => {
        watched.at = this.#sweeps;
      },
      stop: () => {
        this.#watched.delete(watched);
        if (this.#watched.size === 0) this.#disarm();
      },
    };
  }

  /** Stop sweeping (shutdown); the sockets are closed by their owners. */
  close(): void {
    this.#watched.clear();
    this.#disarm();
  }

  #sweep(): void {
    this.#timer = null;
    const now = ++this.#sweeps;
    // forEach, not for…of: run once a second, the sweep is never optimized, and unoptimized each step of a
    // Set's iterator allocates its result (115 KiB a second with 3,000 sockets: young garbage, collections
    // sooner).
    this.#watched.forEach((watched) => {
      if (now - watched.at < this.#silentSweeps) return;
      this.#watched.delete(watched);
      try {
        watched.dead();
      } catch (error) {
        console.error(`lvmh: closing a silent plugin socket failed: ${(error as Error).message}`);
      }
    });
    this.#arm();
  }

  /** A timeout re-armed after each sweep, not an interval: a late sweep is never followed by a catch-up one. */
  #arm(): void {
    if (this.#timer !== null || this.#watched.size === 0) return;
    this.#timer = setTimeout(() => this.#sweep(), this.#sweepMs);
  }

  #disarm(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
  }
}
