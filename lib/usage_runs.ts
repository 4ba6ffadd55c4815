/**
 * The `usage_runs` table's owner: one row per run, derived from the event log after each commit of a session's
 * events, and at start for what was stored before (or before a crash), so usage reports (lib/usage.ts) read
 * a few thousand rows by an index instead of every event of their range. How a row is counted is
 * lib/usage_count.ts; this module decides when rows are read and written.
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import type { SessionRecord } from "./protocol.ts";
import { utcDay } from "./budget_math.ts";
import { gateOf, type WriteGate } from "./write_gate.ts";
import type { UsageRun } from "./usage.ts";
import { advanceRuns, type RunEvent, runParams, type RunRow } from "./usage_count.ts";

/** The events that count. */
const COUNTED = new Set(["message_end", "agent_start", "agent_end"]);
/** Counted rows wait at most this long to be written (reports and shutdown write them at once). */
const WRITE_EVERY_MS = 250;

/**
 * One row per run; `seenSeq`: how far its session's log was counted when the row was written (a session's
 * highest is where counting takes up after a restart). Without rowid: the key is the only other tree.
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS usage_runs(
  sessionId TEXT NOT NULL, startSeq INTEGER NOT NULL, startedAt INTEGER NOT NULL, person TEXT NOT NULL,
  model TEXT, inputTokens REAL NOT NULL DEFAULT 0, outputTokens REAL NOT NULL DEFAULT 0,
  cost REAL NOT NULL DEFAULT 0, counted INTEGER NOT NULL DEFAULT 0, open INTEGER NOT NULL DEFAULT 1,
  seenSeq INTEGER NOT NULL, PRIMARY KEY(sessionId, startSeq)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS usage_runs_by_start ON usage_runs(startedAt);
`;

/** A commit of a session's events as the store reports it (`SessionCommit`), as far as usage goes. */
export interface UsageCommit {
  sessionId: string;
  /** The session's highest seq before the commit. */
  after: number;
  lastSeq: number;
  inserted: readonly { seq: number; event?: Readonly<{ ts: number; type: string }> }[];
}

/**
 * One row per run, derived from the event log. Each commit's events are counted from the store's report of
 * it (no read back); the rows they change are written together at most every `WRITE_EVERY_MS`, in one
 * transaction, not one per ingest commit: each commit is a write to the file that can stall the event loop on
 * a busy disk, and a run's row changes several times a second while it works. A session whose commits were
 * not all written (a crash before the write, an upgrade) is read from the log from where it was last counted
 * (its rows' highest `seenSeq`, written with them: a crash loses neither or both). Reports write what waits
 * and read what was not counted yet first, so they always tell what the log holds.
 */
export class UsageRuns {
  #db: DatabaseSync;
  /** Rows counted and not written yet (by session and start seq), and each such session's counted seq. */
  #pending = new Map<string, RunRow>();
  #pendingSeen = new Map<string, number>();
  #writeTimer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;
  #gate: WriteGate;
  /** Per session: the seq counted up to. */
  #seen = new Map<string, number>();
  /** Per session: its run not ended yet (null: none), once read. */
  #open = new Map<string, RunRow | null>();
  #scan: StatementSync;
  #openOf: StatementSync;
  #put: StatementSync;
  #range: StatementSync;
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(db: DatabaseSync) {
    this.#db = db;
    this.#gate = gateOf(db);
    db.exec(SCHEMA);
    this.#scan = db.prepare(
      `SELECT seq, ts, type, payload FROM events WHERE sessionId = ? AND seq > ?
        AND type IN ('message_end','agent_start','agent_end') ORDER BY seq`,
    );
    this.#openOf = db.prepare(
      "SELECT * FROM usage_runs WHERE sessionId = ? AND open = 1 ORDER BY startSeq DESC LIMIT 1",
    );
    this.#put = db.prepare(
      `INSERT OR REPLACE INTO usage_runs(sessionId, startSeq, startedAt, person, model, inputTokens,
        outputTokens, cost, counted, open, seenSeq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.#range = db.prepare("SELECT * FROM usage_runs WHERE startedAt >= ? AND startedAt < ?");
    this.#loadSeen();
  }

  #loadSeen(sessionId?: string): void {
    const rows =
      (sessionId === undefined
        ? this.#db.prepare("SELECT sessionId, MAX(seenSeq) AS seq FROM usage_runs GROUP BY sessionId").all()
        : this.#db.prepare("SELECT sessionId, MAX(seenSeq) AS seq FROM usage_runs WHERE sessionId = ?").all(
          sessionId,
        )) as { sessionId: string | null; seq: number | null }[];
    if (sessionId !== undefined) this.#seen.delete(sessionId);
    for (const r of rows) if (r.sessionId !== null && r.seq !== null) this.#seen.set(r.sessionId, r.seq);
  }

  /**
   * Read what the log holds beyond the table, a session per turn of the event loop (a large log upgraded to
   * this table, or events stored just before a crash), so the start is not held up; reports catch up
   * whatever is left first.
   */
  backfill(sessions: () => readonly SessionRecord[]): void {
    const behind = sessions().filter((s) => s.lastSeq !== (this.#seen.get(s.id) ?? 0));
    const step = () => {
      const s = behind.shift();
      if (s === undefined) return;
      this.catchUp(s.id, s.lastSeq);
      this.#timer = setTimeout(step, 0);
    };
    this.#timer = setTimeout(step, 0);
  }

  /**
   * Events were committed (one ingest tick, any number of sessions): count the runs they tell of, in one
   * transaction. A refused write (a full disk) is logged, not thrown: those sessions are read from the log
   * later.
   */
  committed(commits: readonly UsageCommit[]): void {
    const changed = new Map<string, RunRow>();
    const counted = new Map<string, number>();
    for (const c of commits) {
      const seen = this.#seen.get(c.sessionId) ?? 0;
      if (c.lastSeq <= seen) continue;
      if (seen !== c.after || c.inserted.some((e) => !e.event)) {
        // Something before this commit was not counted: the log says what.
        this.catchUp(c.sessionId, c.lastSeq);
        continue;
      }
      const events: RunEvent[] = [];
      for (const { seq, event } of c.inserted) {
        if (COUNTED.has(event!.type)) {
          events.push({ seq, ts: event!.ts, type: event!.type, payload: event as Record<string, unknown> });
        }
      }
      this.#apply(c.sessionId, events, changed);
      counted.set(c.sessionId, c.lastSeq);
    }
    this.#write(changed, counted, "later");
  }

  /** Count what a session's log holds beyond what was counted. */
  catchUp(sessionId: string, lastSeq?: number): void {
    let seen = this.#seen.get(sessionId) ?? 0;
    if (lastSeq !== undefined && lastSeq < seen) {
      // The log is shorter than what was counted: the session was deleted and made again under its id.
      this.sessionDeleted(sessionId);
      seen = 0;
    }
    if (lastSeq !== undefined && lastSeq <= seen) return;
    const rows = this.#scan.all(sessionId, seen) as unknown as {
      seq: number;
      ts: number;
      type: string;
      payload: string;
    }[];
    const events: RunEvent[] = [];
    for (const r of rows) {
      let payload: Record<string, unknown> = {};
      try {
        payload = JSON.parse(r.payload);
      } catch {
        // An unreadable payload tells nothing but that a run started, as in the log's own count.
      }
      events.push({ seq: r.seq, ts: r.ts, type: r.type, payload });
    }
    const changed = new Map<string, RunRow>();
    this.#apply(sessionId, events, changed);
    this.#write(changed, new Map([[sessionId, Math.max(rows.at(-1)?.seq ?? 0, lastSeq ?? 0, seen)]]));
  }

  /** Move a session's runs on by `events` (in seq order), collecting the rows that changed in `changed`. */
  #apply(sessionId: string, events: readonly RunEvent[], changed: Map<string, RunRow>): void {
    if (!events.length) return;
    const touch = (r: RunRow) => changed.set(`${r.sessionId}\n${r.startSeq}`, r);
    const run = advanceRuns(sessionId, this.#openRun(sessionId), events, touch);
    this.#open.set(sessionId, run ? { ...run } : null);
  }

  #openRun(sessionId: string): RunRow | null {
    let run = this.#open.get(sessionId);
    if (run === undefined) {
      const row = this.#openOf.get(sessionId) as unknown as (RunRow & { seenSeq?: number }) | undefined;
      if (row) delete row.seenSeq;
      run = row ?? null;
    }
    return run ? { ...run } : null;
  }

  /**
   * Count `changed` runs and how far each session was counted (`counted`: also sessions whose events changed
   * no run, which a restart reads again at no harm), and write them now or with the next timed write.
   */
  #write(changed: Map<string, RunRow>, counted: Map<string, number>, when: "now" | "later" = "now"): void {
    if (this.#closed) return; // the next start reads them from the log
    for (const [key, row] of changed) this.#pending.set(key, row);
    for (const [id, seq] of counted) {
      this.#pendingSeen.set(id, seq);
      this.#seen.set(id, seq);
    }
    if (when === "now") this.flush();
    else this.#writeTimer ??= setTimeout(() => this.flush(), WRITE_EVERY_MS);
  }

  /** Write every counted row that waits, in one transaction. */
  flush(): void {
    clearTimeout(this.#writeTimer);
    this.#writeTimer = undefined;
    const changed = this.#pending, counted = this.#pendingSeen;
    this.#pending = new Map();
    this.#pendingSeen = new Map();
    if (changed.size) {
      try {
        this.#gate.run(() => {
          this.#db.exec("BEGIN IMMEDIATE");
          try {
            for (const c of changed.values()) {
              this.#put.run(...runParams(c, counted.get(c.sessionId) ?? 0));
            }
            this.#db.exec("COMMIT");
          } catch (error) {
            if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
            throw error;
          }
        });
      } catch (error) {
        // Nothing stored: these sessions count again from what the file holds, read from the log.
        for (const id of counted.keys()) {
          this.#open.delete(id);
          this.#loadSeen(id);
        }
        console.error(`lvmh: usage not counted yet: ${(error as Error).message}`);
      }
    }
  }

  /**
   * Every run that started in `[from, to)` (ms), as `runsIn` tells them from the log.
   * @param sessions the session rows (for repo and model when no message says; and to catch up on them)
   */
  runs(sessions: readonly SessionRecord[], from: number, to: number): UsageRun[] {
    this.flush();
    const info = new Map<string, SessionRecord>();
    for (const s of sessions) {
      info.set(s.id, s);
      if (s.lastSeq !== (this.#seen.get(s.id) ?? 0)) this.catchUp(s.id, s.lastSeq);
    }
    const rows = this.#range.all(from, to) as unknown as RunRow[];
    // In start order within each session, as the log tells them.
    rows.sort((
      a,
      b,
    ) => (a.sessionId < b.sessionId ? -1 : a.sessionId > b.sessionId ? 1 : a.startSeq - b.startSeq));
    return rows.map((r) => {
      const s = info.get(r.sessionId);
      return {
        sessionId: r.sessionId,
        repo: s?.repo ?? null,
        day: utcDay(r.startedAt),
        person: r.person,
        model: r.model ?? s?.model ?? "unknown",
        inputTokens: r.inputTokens,
        outputTokens: r.outputTokens,
        cost: r.cost,
      };
    });
  }

  /** A session was deleted: forget its runs (a new session of the same id starts from nothing). */
  sessionDeleted(sessionId: string): void {
    for (const [key, row] of this.#pending) if (row.sessionId === sessionId) this.#pending.delete(key);
    this.#pendingSeen.delete(sessionId);
    this.#gate.run(() => this.#db.prepare("DELETE FROM usage_runs WHERE sessionId = ?").run(sessionId));
    this.#seen.delete(sessionId);
    this.#open.delete(sessionId);
  }

  /** Write what waits and stop; what is committed afterwards is read from the log at the next start. */
  close(): void {
    clearTimeout(this.#timer);
    if (this.#closed) return;
    this.flush();
    this.#closed = true;
  }
}
