/**
 * Named tokens and their roles, over the async `TokenLog` (lib/storage/token_log.ts: the SQLite file, or the
 * PostgreSQL database every replica shares). Tokens are `lvmh_` + 32 random bytes (base64url), shown once when
 * created and stored only as SHA-256 hashes; the bootstrap token (`LVMH_TOKEN` or `data/token`) is the admin
 * named `bootstrap`, compared in constant time.
 *
 * A revoked token stops working: on SQLite every request looks its hash up in the file (so a revocation by the
 * `deno task token` command counts at once). With a shared database, the hashes found are kept in memory, so a
 * request costs no round trip; an entry goes as soon as its revocation is heard — at once on the replica that
 * revoked, by the log's hint (within milliseconds) or sweep (within `REVOKED_SWEEP_MS`) on the others. Open
 * sockets and streams that watch a token are closed on every replica the same way.
 */
import { type Role, ROLES, type TokenInfo } from "./token_store.ts";
import type { TokenLog } from "./storage/token_log.ts";
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

/** Add a token to a store or log (the REST route and the command share this). */
export async function addToken(
  store: { insert(name: string, role: Role, hash: string): boolean | Promise<boolean> },
  name: string,
  role: Role,
): Promise<Identity & { token: string }> {
  const parsed = TokenBody.safeParse({ name, role });
  if (!parsed.success) throw new InvalidError(parsed.error.issues[0].message);
  const token = newToken();
  if (!await store.insert(name, role, await hashToken(token))) {
    throw new ConflictError(`A token named "${name}" exists already (names of revoked tokens stay taken)`);
  }
  return { name, role, token };
}

/** Named tokens of a running daemon. */
export class Tokens {
  #log: TokenLog;
  #watchers = new Map<string, Set<() => void>>();
  #touched = new Map<string, number>();
  /** Live tokens found by hash (shared database only; null: look each one up). */
  #known: Map<string, Identity> | null;
  /** Counts revocations heard: a lookup that began before one must not put what it found in `#known`. */
  #revocations = 0;
  #unsubscribe: () => void;
  /** The bootstrap token's hash, computed once: every cookie check compares against it. */
  #bootstrapHash: Promise<string>;
  #bootstrap: string;

  constructor(log: TokenLog, bootstrap: string) {
    this.#log = log;
    this.#bootstrap = bootstrap;
    this.#bootstrapHash = hashToken(bootstrap);
    this.#known = log.kind === "postgres" ? new Map() : null;
    // Revocations from anywhere: this daemon's routes, the token command, another replica.
    this.#unsubscribe = log.revoked((name) => this.#revoked(name));
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
    // The map is keyed by the SHA-256 of a secret: finding a key reveals nothing an attacker could time.
    let found = this.#known?.get(hash) ?? null;
    if (!found) {
      const revocations = this.#revocations;
      found = await this.#log.find(hash);
      if (found && this.#known && revocations === this.#revocations) this.#known.set(hash, found);
    }
    if (found) {
      const now = Date.now();
      if (now - (this.#touched.get(found.name) ?? 0) > TOUCH_INTERVAL_MS) {
        this.#touched.set(found.name, now);
        void this.#log.touch(found.name, now);
      }
    }
    return found && { name: found.name, role: found.role };
  }

  /** Create a token; its value is in the answer and nowhere else. */
  add(name: string, role: Role): Promise<Identity & { token: string }> {
    return addToken(this.#log, name, role);
  }

  /** Every token, without values or hashes. */
  list(): Promise<TokenInfo[]> {
    return this.#log.list();
  }

  /**
   * Revoke a token and close whatever is open with it, here at once and on other replicas as they hear of it.
   * @throws {NotFoundError} when no live token has that name.
   */
  async revoke(name: string): Promise<void> {
    if (!await this.#log.revoke(name)) throw new NotFoundError(`No live token named "${name}"`);
    this.#revoked(name);
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

  /** Stop hearing of revocations and release the log (shutdown). */
  async close(): Promise<void> {
    this.#unsubscribe();
    await this.#log.close();
  }

  #revoked(name: string): void {
    this.#revocations++;
    if (this.#known) {
      for (const [hash, who] of this.#known) if (who.name === name) this.#known.delete(hash);
    }
    const set = this.#watchers.get(name);
    this.#watchers.delete(name);
    for (const fn of set ?? []) {
      try {
        fn();
      } catch { /* a socket already closing */ }
    }
  }
}
