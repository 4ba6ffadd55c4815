/**
 * The plugin's dead-daemon check: an application `ping` every PING_MS, and "dead" when nothing at all has
 * come from the daemon for DEAD_MS (a paused or unplugged daemon never closes the socket itself). Any
 * frame counts as alive: `pong`, but also the `error` an older daemon answers a ping it does not know.
 */
import { HEARTBEAT_DEAD_MS, HEARTBEAT_PING_MS } from "./constants.ts";
import { unref } from "./timers.ts";

/** The interval a heartbeat with `options` pings at: what the upgrade request promises the daemon. */
export function heartbeatPingMs(options: { pingMs?: number } = {}): number {
  return options.pingMs ?? HEARTBEAT_PING_MS;
}

/** One socket's heartbeat; `stop()` when the socket goes. */
export class Heartbeat {
  #ping: () => void;
  #dead: () => void;
  #pingMs: number;
  #deadMs: number;
  #last = Date.now();
  #pinger: ReturnType<typeof setInterval> | null = null;
  #watch: ReturnType<typeof setTimeout> | null = null;

  /**
   * @param ping sends one ping (may throw: the socket's own close handling follows)
   * @param dead called once when the daemon stayed silent for `deadMs`
   */
  constructor(ping: () => void, dead: () => void, options: { pingMs?: number; deadMs?: number } = {}) {
    this.#ping = ping;
    this.#dead = dead;
    this.#pingMs = heartbeatPingMs(options);
    this.#deadMs = options.deadMs ?? HEARTBEAT_DEAD_MS;
  }

  /** Start pinging and watching (the socket just opened). */
  start(): void {
    this.#last = Date.now();
    this.#pinger = unref(setInterval(() => {
      try {
        this.#ping();
      } catch { /* the socket is going: its close ends this heartbeat */ }
    }, this.#pingMs));
    this.#arm(this.#deadMs);
  }

  /** A frame came from the daemon. Cheap: no timer is touched per frame. */
  heard(): void {
    this.#last = Date.now();
  }

  /** Stop for good. */
  stop(): void {
    if (this.#pinger) clearInterval(this.#pinger);
    if (this.#watch) clearTimeout(this.#watch);
    this.#pinger = this.#watch = null;
  }

  #arm(ms: number) {
    this.#watch = unref(setTimeout(() => {
      const silent = Date.now() - this.#last;
      if (silent < this.#deadMs) return this.#arm(this.#deadMs - silent);
      this.stop();
      this.#dead();
    }, ms));
  }
}
