/**
 * The `approvals` table, in the store's SQLite file: one row per tool call that waited for a person. Its SQL
 * is reached through lib/storage/sqlite_approval_log.ts (the owner, lib/approvals.ts, works on that log; the
 * daemon reads `pending()` here once at start, synchronously); every change is one statement (a decision with
 * the writes that belong to it: one transaction), so a SIGKILL leaves each row before or after it.
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import { gateOf, type WriteGate } from "./write_gate.ts";
import type { Approval, ApprovalSource, ApprovalState } from "./protocol.ts";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS approvals(
  id TEXT PRIMARY KEY, sessionId TEXT NOT NULL, toolCallId TEXT NOT NULL, toolName TEXT NOT NULL,
  args TEXT NOT NULL, state TEXT NOT NULL DEFAULT 'pending', decidedBy TEXT, decidedAt INTEGER, reason TEXT,
  createdAt INTEGER NOT NULL, appliedAt INTEGER, source TEXT);
CREATE INDEX IF NOT EXISTS approvals_by_session ON approvals(sessionId, createdAt);
CREATE INDEX IF NOT EXISTS approvals_by_state ON approvals(state, createdAt);
`;

/** A stored approval: the REST shape plus where the applied answer came from. */
export interface ApprovalRecord extends Approval {
  source: ApprovalSource | null;
}

interface Row extends Omit<ApprovalRecord, "args" | "kind"> {
  args: string;
  kind: string | null;
}

const COLUMNS =
  "id, sessionId, toolCallId, toolName, args, state, decidedBy, decidedAt, reason, createdAt, " +
  "appliedAt, source, kind";

/** SQL for approvals; rows come back as `ApprovalRecord`s. */
export class ApprovalStore {
  #insert: StatementSync;
  #get: StatementSync;
  #decide: StatementSync;
  #apply: StatementSync;
  #pending: StatementSync;

  /** The file's write gate (lib/write_gate.ts): writes fail at once while the file refuses them. */
  #gate: WriteGate;

  #db: DatabaseSync;

  constructor(db: DatabaseSync) {
    this.#db = db;
    this.#gate = gateOf(db);
    db.exec(SCHEMA);
    // Added with budget cards: a file from before gets the column (null: a tool call).
    const columns = db.prepare("PRAGMA table_info(approvals)").all() as { name: string }[];
    if (!columns.some((c) => c.name === "kind")) db.exec("ALTER TABLE approvals ADD COLUMN kind TEXT");
    this.#insert = db.prepare(
      "INSERT OR IGNORE INTO approvals(id, sessionId, toolCallId, toolName, args, createdAt, kind) VALUES (?, ?, ?, ?, ?, ?, ?)",
    );
    this.#get = db.prepare(`SELECT ${COLUMNS} FROM approvals WHERE id = ?`);
    this.#decide = db.prepare(
      "UPDATE approvals SET state = ?, decidedBy = ?, decidedAt = ?, reason = ? WHERE id = ? AND state = 'pending'",
    );
    this.#apply = db.prepare(
      "UPDATE approvals SET appliedAt = ?, source = ? WHERE id = ? AND appliedAt IS NULL",
    );
    this.#pending = db.prepare(
      `SELECT ${COLUMNS} FROM approvals WHERE state = 'pending' ORDER BY createdAt, id`,
    );
  }

  /** Insert a new pending approval; false when one with this id exists (a re-sent request). */
  insert(
    a: Pick<Approval, "id" | "sessionId" | "toolCallId" | "toolName" | "args" | "createdAt" | "kind">,
  ): boolean {
    const args = JSON.stringify(a.args ?? null);
    return this.#gate.run(() =>
      this.#insert.run(a.id, a.sessionId, a.toolCallId, a.toolName, args, a.createdAt, a.kind ?? null)
        .changes > 0
    );
  }

  /** One approval, or null. */
  get(id: string): ApprovalRecord | null {
    const row = this.#get.get(id) as unknown as Row | undefined;
    return row ? record(row) : null;
  }

  /**
   * Move a pending approval to a final state; false when it was no longer pending.
   * @param also writes that belong to the decision (a budget card's raise): run in the same transaction
   * when the decision is stored, so a crash keeps both or neither; when it throws, neither is stored.
   */
  decide(
    id: string,
    state: Exclude<ApprovalState, "pending">,
    by: string,
    reason: string | null,
    also?: () => void,
  ): boolean {
    const write = () => {
      const changed = this.#decide.run(state, by, Date.now(), reason, id).changes > 0;
      if (changed) also?.();
      return changed;
    };
    if (!also || this.#db.isTransaction) return this.#gate.run(write);
    return this.#gate.run(() => {
      this.#db.exec("BEGIN IMMEDIATE");
      try {
        const changed = write();
        this.#db.exec("COMMIT");
        return changed;
      } catch (error) {
        if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
        throw error;
      }
    });
  }

  /** Correct a decided approval to what the agent really applied (the terminal answered first). */
  overrule(id: string, state: Exclude<ApprovalState, "pending">, by: string): void {
    this.#gate.run(() =>
      this.#db.prepare(
        "UPDATE approvals SET state = ?, decidedBy = ?, decidedAt = ?, reason = NULL WHERE id = ?",
      ).run(state, by, Date.now(), id)
    );
  }

  /** Record that the plugin applied an answer; false when already recorded. */
  applied(id: string, source: ApprovalSource): boolean {
    return this.#gate.run(() => this.#apply.run(Date.now(), source, id).changes > 0);
  }

  /** Every pending approval, oldest first. */
  pending(): ApprovalRecord[] {
    return (this.#pending.all() as unknown as Row[]).map(record);
  }

  /** Approvals filtered by session and state, oldest first. */
  list(filter: { sessionId?: string; state?: ApprovalState } = {}): ApprovalRecord[] {
    const where: string[] = [];
    const params: string[] = [];
    if (filter.sessionId !== undefined) where.push("sessionId = ?") && params.push(filter.sessionId);
    if (filter.state !== undefined) where.push("state = ?") && params.push(filter.state);
    const sql = `SELECT ${COLUMNS} FROM approvals${where.length ? " WHERE " + where.join(" AND ") : ""}` +
      " ORDER BY createdAt, id LIMIT 10000";
    return (this.#db.prepare(sql).all(...params) as unknown as Row[]).map(record);
  }

  /** Remove a deleted session's approvals. */
  deleteSession(sessionId: string): void {
    this.#gate.run(() => this.#db.prepare("DELETE FROM approvals WHERE sessionId = ?").run(sessionId));
  }
}

function record(row: Row): ApprovalRecord {
  const { kind, ...rest } = row;
  return { ...rest, args: JSON.parse(row.args), ...(kind === "budget" ? { kind } : {}) };
}
