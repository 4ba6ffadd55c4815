/**
 * The audit log: one append-only row per human action (prompt with its text, abort, approve/reject, policy,
 * spawn, stop, delete, GitLab connect/disconnect, token add/revoke) and per failed sign-in. No route edits or
 * deletes a row; rows are read in id order.
 *
 * `Audit` is the daemon's owner, over the async `AuditLog` (lib/storage/audit_log.ts: the SQLite file, or the
 * PostgreSQL database every replica appends to); `AuditStore` is the SQLite table under the SQLite log.
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import { gateOf, type WriteGate } from "./write_gate.ts";
import type { AuditEntry } from "./protocol.ts";
import type { AuditInput, AuditLog } from "./storage/audit_log.ts";

export type { AuditInput };

const SCHEMA = `
CREATE TABLE IF NOT EXISTS audit(
  id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, actor TEXT NOT NULL, role TEXT,
  action TEXT NOT NULL, sessionId TEXT, detail TEXT);
`;

/** Longest detail kept per row (a prompt's text beyond it is cut). */
const MAX_DETAIL_CHARS = 20_000;

// One audit row is a wire shape the browser shares: it lives in lib/protocol.ts.
export type { AuditEntry };

/**
 * The daemon's audit log. Appends go out one at a time in call order: ids are commit-ordered across replicas,
 * so this replica's actions keep their order in the one log. A read waits for this replica's appends, so an
 * action is listed by the request after it.
 */
export class Audit {
  #log: AuditLog;
  #tail: Promise<void> = Promise.resolve();
  #inFlight = 0;

  constructor(log: AuditLog) {
    this.#log = log;
  }

  /**
   * Append a row; never throws or rejects (an action that already happened must not turn into an error).
   * @returns when the row is stored (or its failure logged); callers need not wait.
   */
  append(entry: AuditInput): Promise<void> {
    const run = () => this.#log.append(entry).catch(() => {}).finally(() => this.#inFlight--);
    // Nothing queued: at once, so a SQLite append is written before this returns, as it always was.
    return this.#tail = this.#inFlight++ === 0 ? run() : this.#tail.then(run);
  }

  /** Rows with id above `after`, oldest first (at most `limit`, capped by the log). */
  async page(after: number, limit: number): Promise<AuditEntry[]> {
    await this.#tail;
    return await this.#log.page(after, limit);
  }

  /** Wait for the queued appends, then release the log. */
  async close(): Promise<void> {
    await this.#tail;
    await this.#log.close();
  }
}

/** The append-only audit table in a SQLite file. */
export class AuditStore {
  #insert: StatementSync;
  #page: StatementSync;

  /** The file's write gate: while the file refuses writes (locked, full) a row fails at once, not after a wait. */
  #gate: WriteGate;

  constructor(db: DatabaseSync) {
    this.#gate = gateOf(db);
    db.exec(SCHEMA);
    this.#insert = db.prepare(
      "INSERT INTO audit(at, actor, role, action, sessionId, detail) VALUES (?, ?, ?, ?, ?, ?)",
    );
    this.#page = db.prepare("SELECT * FROM audit WHERE id > ? ORDER BY id LIMIT ?");
  }

  /** Append a row; never throws (a full disk must not turn an action that already happened into an error). */
  append(entry: AuditInput): void {
    try {
      let detail = entry.detail === undefined ? null : JSON.stringify(entry.detail);
      if (detail && detail.length > MAX_DETAIL_CHARS) {
        detail = JSON.stringify({ truncated: detail.slice(0, MAX_DETAIL_CHARS) });
      }
      this.#gate.run(() =>
        this.#insert.run(Date.now(), entry.actor, entry.role, entry.action, entry.sessionId ?? null, detail)
      );
    } catch (error) {
      console.error(`lvmh: could not append to the audit log: ${(error as Error).message}`);
    }
  }

  /** Rows with id above `after`, oldest first. */
  page(after: number, limit: number): AuditEntry[] {
    const rows = this.#page.all(
      after,
      limit,
    ) as unknown as (Omit<AuditEntry, "detail"> & { detail: string })[];
    return rows.map((r) => ({ ...r, detail: r.detail === null ? null : JSON.parse(r.detail) }));
  }
}
