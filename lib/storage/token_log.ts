/**
 * Named tokens behind an async interface, so that several replicas on one database share them. Two
 * implementations (SQLite over the `tokens` table `deno task token` also writes, PostgreSQL) pass one contract
 * (tests/process/token_audit_contract_test.ts). The semantics are lib/token_store.ts's: only SHA-256 hashes are stored
 * (never a token), lookups are by hash (the constant-time comparison with the bootstrap token stays in
 * lib/tokens.ts), names stay taken after revocation (so the audit log's names stay unambiguous), a lookup of a
 * revoked token finds nothing, `lastUsedAt` is written best effort.
 *
 * Revocation across replicas: `revoked(onRevoked)` hears every name revoked from now on, wherever it was
 * revoked. The hint is fast and lossy (PostgreSQL NOTIFY after the revoking commit, or an in-process call on
 * SQLite), so a sweep reads the names revoked since its last look every `REVOKED_SWEEP_MS`, which also finds
 * revocations by another process (the token command on the SQLite file). A hint is never trusted: it only
 * makes the sweep look now, so the table says what was revoked.
 */
import type { TokenInfo } from "../protocol.ts";
import type { Role } from "../wire.ts";
import { Looks } from "./looks.ts";

export type { Role, TokenInfo };

/** Who a live token's hash belongs to. */
export interface TokenOwner {
  name: string;
  role: Role;
}

/** Called once per revoked name (per subscription), possibly late by a sweep period. */
export type OnRevoked = (name: string) => void;

/** How often a subscription looks for revocations a lost hint missed. */
export const REVOKED_SWEEP_MS = 500;
/**
 * Each sweep reads back this far before its previous look: a revocation's time is taken just before its
 * commit, so a revocation timed before a look may become visible only after it.
 */
export const REVOKED_SLACK_MS = 5_000;

/** The named tokens of a deployment. */
export interface TokenLog {
  /** Which database holds them. */
  readonly kind: "sqlite" | "postgres";
  /** Store a token's hash under a name; false when the name is taken (revoked names stay taken). */
  insert(name: string, role: Role, hash: string): Promise<boolean>;
  /** The live token with this hash, or null (unknown or revoked). */
  find(hash: string): Promise<TokenOwner | null>;
  /**
   * Record a use at `at` (ms epoch; callers throttle this). Best effort: never rejects, since a sign-in is a
   * read and must not fail because the store refuses a write.
   */
  touch(name: string, at: number): Promise<void>;
  /** Every token, oldest first, without hashes. */
  list(): Promise<TokenInfo[]>;
  /** Revoke a live token; false when there is none of that name. Subscribers everywhere hear of it. */
  revoke(name: string): Promise<boolean>;
  /** Names revoked at or after `since` (ms epoch of the store's clock). */
  revokedSince(since: number): Promise<{ name: string; revokedAt: number }[]>;
  /**
   * Hear of revocations made from now on, on any replica (revocations made a few seconds before may be heard
   * too: they are revocations all the same).
   * @returns a function that stops this subscription.
   */
  revoked(onRevoked: OnRevoked): () => void;
  /** Stop the sweeps and the listener and release connections; unusable afterwards. */
  close(): Promise<void>;
}

/** What a sweep read: revocations at or after the asked time, and the store's clock when it read them. */
export interface RevokedWindow {
  rows: { name: string; revokedAt: number }[];
  now: number;
}

/**
 * One subscription's sweep: reads the window since its last look (minus the slack), calls back each name it
 * has not called back yet, and forgets names once they are older than the window (they cannot come back).
 * A `look()` while a sweep runs makes one more run after it, so a hint is never swallowed by a sweep that read
 * before the revoking commit.
 */
export class RevokedWatch {
  #onRevoked: OnRevoked;
  #read: (since: number | null) => Promise<RevokedWindow>;
  /** The store's clock at the previous look (null: not looked yet, when the window starts at its own now). */
  #cursor: number | null = null;
  /** Names called back, with their revocation time, until they fall out of the window. */
  #heard = new Map<string, number>();
  #looks: Looks;

  constructor(read: (since: number | null) => Promise<RevokedWindow>, onRevoked: OnRevoked, everyMs: number) {
    this.#read = read;
    this.#onRevoked = onRevoked;
    this.#looks = new Looks(() => this.#sweep(), everyMs);
    void this.look();
  }

  /** A name known to be revoked at `revokedAt` (this replica's own revocation): called back now. */
  heard(name: string, revokedAt: number): void {
    if (this.#looks.stopped || this.#heard.has(name)) return;
    this.#heard.set(name, revokedAt);
    this.#call(name);
  }

  /** Read the window now (a hint, a re-LISTEN). */
  look(): Promise<void> {
    return this.#looks.look();
  }

  stop(): void {
    this.#looks.stop();
  }

  async #sweep(): Promise<boolean> {
    try {
      const since = this.#cursor === null ? null : this.#cursor - REVOKED_SLACK_MS;
      const { rows, now } = await this.#read(since);
      if (this.#looks.stopped) return false;
      for (const { name, revokedAt } of rows) this.heard(name, revokedAt);
      this.#cursor = Math.max(this.#cursor ?? now, now);
      const oldest = this.#cursor - REVOKED_SLACK_MS;
      for (const [name, at] of this.#heard) if (at < oldest) this.#heard.delete(name);
    } catch {
      // The store is away or closing: the next period looks again, from the same cursor.
    }
    return true;
  }

  #call(name: string): void {
    try {
      this.#onRevoked(name);
    } catch {
      // A subscriber's own failure (a socket already closing) is its business.
    }
  }
}
