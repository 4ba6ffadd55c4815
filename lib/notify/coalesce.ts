/** At most one notification per session and kind in a window, so a busy session cannot flood a phone. */

/** The window: one notification per session and kind per 30 s (README.md, "Hearing back"). */
export const COALESCE_MS = 30_000;

/** Remembers what was let through recently. */
export class Coalescer {
  #last = new Map<string, number>();
  #windowMs: number;

  constructor(windowMs = COALESCE_MS) {
    this.#windowMs = windowMs;
  }

  /** True when an event of `kind` for `sessionId` may go out at `now` (and records it). */
  admit(sessionId: string | null, kind: string, now = Date.now()): boolean {
    const key = `${sessionId ?? ""}\u0000${kind}`;
    const last = this.#last.get(key);
    if (last !== undefined && now - last < this.#windowMs) return false;
    this.#last.set(key, now);
    if (this.#last.size > 10_000) {
      for (const [k, t] of this.#last) if (now - t >= this.#windowMs) this.#last.delete(k);
    }
    return true;
  }
}
