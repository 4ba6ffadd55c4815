/**
 * Reconnect delays: exponential with jitter, and a slower series after a close by a newer socket (4000).
 */
import { CloseCode } from "../../lib/wire.ts";
import { BACKOFF_MAX_MS, BACKOFF_MIN_MS, REPLACED_MIN_MS } from "./constants.ts";

/** The delay before each reconnect; `reset()` after a welcome. */
export class Backoff {
  #attempt = 0;
  #replaced = 0;
  #random: () => number;

  constructor(random: () => number = Math.random) {
    this.#random = random;
  }

  /** The delay in ms before the next attempt, after a socket closed with `code`. */
  next(code: number): number {
    let delay;
    if (code === CloseCode.replaced) {
      // Another process holds this session (e.g. a second `pi -c`). Come back, but ever more slowly, and the
      // count survives welcomes, so two such processes settle on taking turns every 30 s, not every 5 s.
      delay = Math.min(
        BACKOFF_MAX_MS,
        REPLACED_MIN_MS * 2 ** Math.min(this.#replaced++, 16),
      );
    } else {
      delay = Math.min(
        BACKOFF_MAX_MS,
        BACKOFF_MIN_MS * 2 ** Math.min(this.#attempt++, 16),
      );
    }
    return delay * (0.5 + this.#random() * 0.5);
  }

  /** A welcome came: the next failure starts from the minimum again (the replaced count stays). */
  reset(): void {
    this.#attempt = 0;
  }
}
