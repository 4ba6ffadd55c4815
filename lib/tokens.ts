/**
 * Named tokens and their roles: the one owner of the `tokens` rows. Tokens are `lvmh_` + 32 random bytes
 * (base64url), shown once when created and stored only as SHA-256 hashes; the bootstrap token (`LVMH_TOKEN` or
 * `data/token`) is the admin named `bootstrap`, compared in constant time. A revoked token stops working at once:
 * requests look it up every time, and open sockets and streams that watch it are closed (also when the
 * `deno task token` command revoked it, which this module hears of by polling the table).
 */
import { type Role, ROLES, type TokenInfo, type TokenStore } from "./token_store.ts";
import { TokenBody } from "./protocol.ts";
import { BOOTSTRAP_NAME } from "./wire.ts";
import { ConflictError, InvalidError, NotFoundError } from "./errors.ts";
import { safeEqual } from "./auth_crypto.ts";

export type { Role, TokenInfo };
export { BOOTSTRAP_NAME, ROLES };

/** Who a valid token belongs to. */
export interface Identity {
  name: string;
  role: Role;
}

export const TOKEN_PREFIX = "lvmh_";
/** How often revocations written by the command line are looked for. */
const REVOCATION_POLL_MS = 1000;
/** `lastUsedAt` is written at most this often per token. */
const TOUCH_INTERVAL_MS = 60_000;

/** A fresh token value. */
export function newToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return TOKEN_PREFIX + btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_")
    .replace(/=+$/, "");
}

/** The stored form of a token: hex SHA-256. */
export async function hashToken(token: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(token)));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Add a token to a store (the REST route and the command share this). */
export async function addToken(
  store: TokenStore,
  name: string,
  role: Role,
): Promise<Identity & { token: string }> {
  const parsed = TokenBody.safeParse({ name, role });
  if (!parsed.success) throw new InvalidError(parsed.error.issues[0].message);
  const token = newToken();
  if (!store.insert(name, role, await hashToken(token))) {
    throw new ConflictError(`A token named "${name}" exists already (names of revoked tokens stay taken)`);
  }
  return { name, role, token };
}

/** Named tokens of a running daemon. */
export class Tokens {
  #watchers = new Map<string, Set<() => void>>();
  #touched = new Map<string, number>();
  #lastPoll = Date.now();
  #timer: ReturnType<typeof setInterval>;
  /** The bootstrap token's hash, computed once: every cookie check compares against it. */
  #bootstrapHash: Promise<string>;
  #store: TokenStore;
  #bootstrap: string;

  constructor(store: TokenStore, bootstrap: string) {
    this.#store = store;
    this.#bootstrap = bootstrap;
    this.#bootstrapHash = hashToken(bootstrap);
    this.#timer = setInterval(() => this.#poll(), REVOCATION_POLL_MS);
    Deno.unrefTimer(this.#timer);
  }

  /** Who holds `secret`, or null for an unknown or revoked token. */
  async identify(secret: string): Promise<Identity | null> {
    if (!secret.startsWith(TOKEN_PREFIX)) {
      return await safeEqual(secret, this.#bootstrap) ? { name: BOOTSTRAP_NAME, role: "admin" } : null;
    }
    return this.identifyHash(await hashToken(secret));
  }

  /** As `identify`, from the token's hash (the page cookie carries it). */
  async identifyHash(hash: string): Promise<Identity | null> {
    if (await safeEqual(hash, await this.#bootstrapHash)) {
      return { name: BOOTSTRAP_NAME, role: "admin" };
    }
    const found = this.#store.find(hash);
    if (found) {
      const now = Date.now();
      if (now - (this.#touched.get(found.name) ?? 0) > TOUCH_INTERVAL_MS) {
        this.#touched.set(found.name, now);
        this.#store.touch(found.name, now);
      }
    }
    return found;
  }

  /** Create a token; its value is in the answer and nowhere else. */
  add(name: string, role: Role): Promise<Identity & { token: string }> {
    return addToken(this.#store, name, role);
  }

  /** Every token, without values or hashes. */
  list(): TokenInfo[] {
    return this.#store.list();
  }

  /**
   * Revoke a token and close whatever is open with it.
   * @throws {NotFoundError} when no live token has that name.
   */
  revoke(name: string): void {
    if (!this.#store.revoke(name)) throw new NotFoundError(`No live token named "${name}"`);
    this.#fire(name);
  }

  /**
   * Close what a caller opened (a socket, a stream) once its token is revoked; no-op without a caller.
   * @returns the function that stops watching (call it when the socket or stream ends).
   */
  closeOnRevoke(principal: { name: string } | null, close: () => void): () => void {
    return principal ? this.watch(principal.name, close) : () => {};
  }

  /** Call `onRevoked` when the token named `name` is revoked; returns the function that stops watching. */
  watch(name: string, onRevoked: () => void): () => void {
    let set = this.#watchers.get(name);
    if (!set) this.#watchers.set(name, set = new Set());
    set.add(onRevoked);
    return () => {
      set.delete(onRevoked);
      if (set.size === 0 && this.#watchers.get(name) === set) this.#watchers.delete(name);
    };
  }

  /** Stop polling (shutdown). */
  close(): void {
    clearInterval(this.#timer);
  }

  #poll(): void {
    if (this.#watchers.size === 0) {
      this.#lastPoll = Date.now();
      return;
    }
    try {
      const since = this.#lastPoll;
      this.#lastPoll = Date.now();
      for (const { name } of this.#store.revokedSince(since - REVOCATION_POLL_MS)) this.#fire(name);
    } catch {
      // The database is busy or closing: the next round looks again.
    }
  }

  #fire(name: string): void {
    const set = this.#watchers.get(name);
    this.#watchers.delete(name);
    for (const fn of set ?? []) {
      try {
        fn();
      } catch { /* a socket already closing */ }
    }
  }
}
