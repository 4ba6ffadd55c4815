/**
 * The `session_glance` table, in the store's SQLite file: what the list shows of each session (first prompt,
 * last answer line, running or waiting tool, cost so far) and the seq it covers. Rows are written once per
 * `session_update` tick; a row behind the session's lastSeq (a SIGKILL before the write, or a file from before
 * this table) is caught up from the stored events, so the figures never depend on when the daemon died.
 * Only `lib/session_glance.ts` calls this.
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import { gateOf, type WriteGate } from "./write_gate.ts";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS session_glance(
  sessionId TEXT PRIMARY KEY, seq INTEGER NOT NULL, firstPrompt TEXT, lastLine TEXT, tool TEXT, asking TEXT,
  cost REAL NOT NULL DEFAULT 0, activityAt INTEGER);
`;

/** One session's persisted glance. */
export interface GlanceRecord {
  /** The highest persisted seq applied. */
  seq: number;
  firstPrompt: string | null;
  /** The last non-empty line of the latest assistant message. */
  lastLine: string | null;
  /** The tool running now, with its main argument (`bash npm test`). */
  tool: string | null;
  /** The tool call waiting for a person (`approval_request` without its `approval_resolved`). */
  asking: string | null;
  cost: number;
  /** ts of the latest persisted event. */
  activityAt: number | null;
}

const COLUMNS = "sessionId, seq, firstPrompt, lastLine, tool, asking, cost, activityAt";

/** SQL for glances. */
export class GlanceStore {
  #upsert: StatementSync;
  #delete: StatementSync;
  #all: StatementSync;
  /** The file's write gate: while it refuses writes a save fails at once instead of waiting the busy timeout. */
  readonly gate: WriteGate;

  constructor(private readonly db: DatabaseSync) {
    db.exec(SCHEMA);
    this.gate = gateOf(db);
    this.#upsert = db.prepare(
      `INSERT OR REPLACE INTO session_glance(${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.#delete = db.prepare("DELETE FROM session_glance WHERE sessionId = ?");
    this.#all = db.prepare(`SELECT ${COLUMNS} FROM session_glance`);
  }

  /** Every stored glance, by session id. */
  all(): Map<string, GlanceRecord> {
    const out = new Map<string, GlanceRecord>();
    for (const r of this.#all.all() as unknown as (GlanceRecord & { sessionId: string })[]) {
      const { sessionId, ...g } = r;
      out.set(sessionId, { ...g, seq: Number(g.seq), cost: Number(g.cost) });
    }
    return out;
  }

  /**
   * Write glances in one transaction (one fsync for a whole tick of changes).
   * @throws {WriteRefused} at once while the file refuses writes; an Error when SQLite fails.
   */
  save(rows: Iterable<[string, GlanceRecord]>): void {
    this.gate.run(() => this.#save(rows));
  }

  #save(rows: Iterable<[string, GlanceRecord]>): void {
    const inTx = this.db.isTransaction;
    if (!inTx) this.db.exec("BEGIN IMMEDIATE");
    try {
      for (const [id, g] of rows) {
        this.#upsert.run(id, g.seq, g.firstPrompt, g.lastLine, g.tool, g.asking, g.cost, g.activityAt);
      }
      if (!inTx) this.db.exec("COMMIT");
    } catch (error) {
      if (!inTx && this.db.isTransaction) this.db.exec("ROLLBACK");
      throw error;
    }
  }

  /** Forget a session's glance (the session was deleted). */
  delete(id: string): void {
    this.gate.run(() => this.#delete.run(id));
  }
}
