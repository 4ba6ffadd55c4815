/**
 * The `tokens` table: named tokens stored only as SHA-256 hashes. Used by the daemon (`lib/tokens.ts`) and by
 * `deno task token` on the same file, whether or not the daemon runs (SQLite WAL lets both in).
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import { gateOf } from "./write_gate.ts";
import { type Role, ROLES } from "./wire.ts";
import type { TokenInfo } from "./protocol.ts";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS tokens(
  name TEXT PRIMARY KEY, role TEXT NOT NULL, hash TEXT NOT NULL UNIQUE, createdAt INTEGER NOT NULL,
  lastUsedAt INTEGER, revokedAt INTEGER);
`;

// The roles and the listed token are wire shapes the browser shares (lib/wire.ts, lib/protocol.ts).
export { type Role, ROLES, type TokenInfo };

/** SQL for named tokens. */
export class TokenStore {
  #byHash: StatementSync;
  #touch: StatementSync;

  #db: DatabaseSync;

  constructor(db: DatabaseSync) {
    this.#db = db;
    db.exec(SCHEMA);
    this.#byHash = db.prepare("SELECT name, role, revokedAt FROM tokens WHERE hash = ?");
    this.#touch = db.prepare("UPDATE tokens SET lastUsedAt = ? WHERE name = ?");
  }

  /** Insert a token; false when the name is taken (revoked names stay taken, so the audit log stays clear). */
  insert(name: string, role: Role, hash: string): boolean {
    const res = this.#db.prepare(
      "INSERT OR IGNORE INTO tokens(name, role, hash, createdAt) VALUES (?, ?, ?, ?)",
    ).run(name, role, hash, Date.now());
    return res.changes > 0;
  }

  /** The live token with this hash, or null (unknown or revoked). */
  find(hash: string): { name: string; role: Role } | null {
    const row = this.#byHash.get(hash) as { name: string; role: Role; revokedAt: number | null } | undefined;
    return row && row.revokedAt === null ? { name: row.name, role: row.role } : null;
  }

  /**
   * Record a use (callers throttle this). Best effort: a sign-in is a read, so while the file refuses writes
   * (locked, full) the use goes unrecorded rather than failing the request or waiting the busy timeout.
   */
  touch(name: string, at: number): void {
    gateOf(this.#db).tryRun(() => this.#touch.run(at, name));
  }

  /** Every token, oldest first. */
  list(): TokenInfo[] {
    return this.#db.prepare(
      "SELECT name, role, createdAt, lastUsedAt, revokedAt FROM tokens ORDER BY createdAt",
    )
      .all() as unknown as TokenInfo[];
  }

  /** Revoke a live token; false when there is none of that name. */
  revoke(name: string): boolean {
    return this.#db.prepare("UPDATE tokens SET revokedAt = ? WHERE name = ? AND revokedAt IS NULL")
      .run(Date.now(), name).changes > 0;
  }

  /** Names revoked at or after `since` (the daemon polls this to hear of revocations made by the command). */
  revokedSince(since: number): { name: string; revokedAt: number }[] {
    return this.#db.prepare("SELECT name, revokedAt FROM tokens WHERE revokedAt >= ?").all(
      since,
    ) as unknown as {
      name: string;
      revokedAt: number;
    }[];
  }
}
