/**
 * Slows repeated failed authentications from one address: past `maxFailures` (10) within a minute, further failures
 * answer 429 with `Retry-After`, the wait doubling up to a minute. Only failures count and only failures are
 * slowed: a request with a valid token is never delayed, so a guessing client on 127.0.0.1 cannot lock out the
 * plugins that share the address.
 */
const WINDOW_MS = 60_000;
const FIRST_PENALTY_MS = 1000;
const MAX_PENALTY_MS = 60_000;
/** Addresses tracked at most (oldest forgotten first), so a flood of addresses cannot grow memory. */
const MAX_ADDRESSES = 10_000;

interface Record {
  failures: number[];
  penaltyMs: number;
  until: number;
}

/** Failure counts per address. */
export class SigninThrottle {
  #by = new Map<string, Record>();

  #maxFailures: number;

  /** @param maxFailures failures per minute and address before slowing starts (`LVMH_SIGNIN_LIMIT`). */
  constructor(maxFailures = 10) {
    this.#maxFailures = maxFailures;
  }

  /** Seconds to wait when `address` is being slowed now, else null. */
  retryAfter(address: string, now = Date.now()): number | null {
    const r = this.#by.get(address);
    return r && r.until > now ? Math.ceil((r.until - now) / 1000) : null;
  }

  /** Count a failure; returns the seconds to wait when the address is now slowed. */
  failed(address: string, now = Date.now()): number | null {
    let r = this.#by.get(address);
    if (!r) {
      if (this.#by.size >= MAX_ADDRESSES) this.#by.delete(this.#by.keys().next().value!);
      this.#by.set(address, r = { failures: [], penaltyMs: 0, until: 0 });
    }
    r.failures = r.failures.filter((t) => now - t < WINDOW_MS);
    r.failures.push(now);
    if (r.failures.length > this.#maxFailures + 1) r.failures.shift();
    if (r.failures.length <= this.#maxFailures) {
      if (r.until <= now) r.penaltyMs = 0;
      return null;
    }
    r.penaltyMs = Math.min(MAX_PENALTY_MS, r.penaltyMs ? r.penaltyMs * 2 : FIRST_PENALTY_MS);
    r.until = now + r.penaltyMs;
    return Math.ceil(r.penaltyMs / 1000);
  }
}
