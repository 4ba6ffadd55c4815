/**
 * The looks of one subscription's sweep (lib/storage/settings_log.ts, lib/storage/token_log.ts): one now and
 * then, asked for at any time (a hint, a re-LISTEN, this replica's own write) and every period. A look asked
 * for while one runs makes one more run after it, so a hint is never swallowed by a look that read before the
 * change committed.
 */
export class Looks {
  #look: () => Promise<boolean | void>;
  #timer: ReturnType<typeof setInterval> | undefined;
  #running: Promise<void> | null = null;
  #again = false;
  #stopped = false;

  /**
   * @param look one look; false: this run ends now, whatever was asked for meanwhile (the store is away).
   * @param everyMs the period (null: only when asked).
   */
  constructor(look: () => Promise<boolean | void>, everyMs: number | null) {
    this.#look = look;
    if (everyMs !== null) this.#timer = setInterval(() => void this.look(), everyMs);
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  /** Look now, or once more after the look running now. */
  look(): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    if (this.#running) {
      this.#again = true;
      return this.#running;
    }
    return this.#running = this.#loop().finally(() => this.#running = null);
  }

  stop(): void {
    this.#stopped = true;
    clearInterval(this.#timer);
  }

  async #loop(): Promise<void> {
    do {
      this.#again = false;
      if (await this.#look() === false) return;
    } while (this.#again && !this.#stopped);
  }
}

/** A store's subscriptions that each look for themselves: a hint or a (re)LISTEN makes every one look. */
export class Watches<W extends { look(): Promise<void>; stop(): void }> implements Iterable<W> {
  #all = new Set<W>();

  get size(): number {
    return this.#all.size;
  }

  /** @returns what stops `watch` and forgets it. */
  add(watch: W): () => void {
    this.#all.add(watch);
    return () => {
      watch.stop();
      this.#all.delete(watch);
    };
  }

  lookAll(): void {
    for (const watch of this.#all) void watch.look();
  }

  [Symbol.iterator](): Iterator<W> {
    return this.#all[Symbol.iterator]();
  }

  /** Stop every watch and forget them. */
  stop(): void {
    for (const watch of this.#all) watch.stop();
    this.#all.clear();
  }
}
