/**
 * Usage reports (`GET /api/usage`, the `/usage` page): runs, tokens and cost, grouped by UTC day, session,
 * repository, person (the token name that prompted the run; `terminal` for prompts typed into pi) or model.
 * Counted like budgets: each assistant message's usage, or a run's `agent_end` usage from plugins that predate
 * it. `UsageRuns` keeps one row per run (`usage_runs`), derived from the log: after each commit of a session's
 * events, and at start for what was stored before (or before a crash), so a report reads a few thousand rows
 * by an index instead of every event of the range (200,000 events: ~480 ms → a few ms; bench/usage.ts).
 * `runsIn` is the same count straight from the log, kept as the reference the table is tested against.
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import type { SessionRecord } from "./protocol.ts";
import { spentOf, utcDay } from "./budget_math.ts";
import { gateOf, type WriteGate } from "./write_gate.ts";

/** How usage can be grouped. */
export const USAGE_BY = ["day", "session", "repo", "person", "model"] as const;
export type UsageBy = (typeof USAGE_BY)[number];

/** One group of a report. */
export interface UsageRow {
  key: string;
  runs: number;
  inputTokens: number;
  outputTokens: number;
  cost: number;
}

/** One run, as the log tells it: when it started, who asked, on which model, and what it cost. */
export interface UsageRun {
  sessionId: string;
  repo: string | null;
  day: string;
  person: string;
  model: string;
  inputTokens: number;
  outputTokens: number;
  cost: number;
}

interface EventRow {
  sessionId: string;
  ts: number;
  type: string;
  payload: string;
}

/** The longest range one report reads (the log is scanned for it). */
export const MAX_RANGE_DAYS = 366;

/**
 * Every run that started in `[from, to)` (ms), in start order.
 * @param sessions the session rows (for repo and model when a message does not say)
 */
export function runsIn(
  db: DatabaseSync,
  sessions: readonly SessionRecord[],
  from: number,
  to: number,
): UsageRun[] {
  const info = new Map(sessions.map((s) => [s.id, s]));
  const rows = db.prepare(
    `SELECT sessionId, ts, type, payload FROM events WHERE ts >= ? AND ts < ?
      AND type IN ('message_end','agent_start','agent_end') ORDER BY sessionId, seq`,
  ).all(from, to) as unknown as EventRow[];
  const runs: UsageRun[] = [];
  let current: (UsageRun & { counted: boolean }) | null = null;
  let session = "";
  const finish = () => {
    if (current) runs.push(strip(current));
    current = null;
  };
  for (const r of rows) {
    if (r.sessionId !== session) {
      finish();
      session = r.sessionId;
    }
    const s = info.get(r.sessionId);
    if (r.type === "agent_start") {
      finish();
      current = {
        sessionId: r.sessionId,
        repo: s?.repo ?? null,
        day: utcDay(r.ts),
        person: "terminal",
        model: s?.model ?? "unknown",
        inputTokens: 0,
        outputTokens: 0,
        cost: 0,
        counted: false,
      };
      continue;
    }
    if (!current) continue; // a run that started before the range is not this range's
    const run: UsageRun & { counted: boolean } = current;
    let p: Record<string, unknown>;
    try {
      p = JSON.parse(r.payload);
    } catch {
      continue;
    }
    const m = p.message as { role?: string; usage?: Record<string, unknown>; model?: unknown } | undefined;
    if (r.type === "message_end" && m?.role === "user") {
      const by = (p.from as { by?: unknown } | undefined)?.by;
      if (run.person === "terminal" && typeof by === "string" && by) run.person = by;
    } else if (r.type === "message_end" && m?.role === "assistant" && m.usage) {
      if (!run.counted && typeof m.model === "string" && m.model) run.model = m.model;
      run.counted = true;
      add(run, m.usage);
    } else if (r.type === "agent_end") {
      if (!run.counted) add(run, p.usage as Record<string, unknown> | undefined);
      finish();
    }
  }
  finish();
  return runs;
}

/** Runs grouped by `by`, most expensive first (by day: oldest first). */
export function groupRuns(runs: readonly UsageRun[], by: UsageBy): UsageRow[] {
  const groups = new Map<string, UsageRow>();
  for (const r of runs) {
    const key = keyOf(r, by);
    const g = groups.get(key) ?? { key, runs: 0, inputTokens: 0, outputTokens: 0, cost: 0 };
    g.runs++;
    g.inputTokens += r.inputTokens;
    g.outputTokens += r.outputTokens;
    g.cost += r.cost;
    groups.set(key, g);
  }
  const rows = [...groups.values()];
  return by === "day"
    ? rows.sort((a, b) => (a.key < b.key ? -1 : 1))
    : rows.sort((a, b) => b.cost - a.cost || b.inputTokens + b.outputTokens - a.inputTokens - a.outputTokens);
}

/** The group key of a run. */
export function keyOf(r: UsageRun, by: UsageBy): string {
  switch (by) {
    case "day":
      return r.day;
    case "session":
      return r.sessionId;
    case "repo":
      return r.repo ?? "(terminal)";
    case "person":
      return r.person;
    case "model":
      return r.model;
  }
}

function add(
  run: { inputTokens: number; outputTokens: number; cost: number },
  u: Record<string, unknown> | undefined,
): void {
  const s = spentOf(u);
  const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) && v > 0 ? v : 0);
  run.inputTokens += num(u?.inputTokens);
  run.outputTokens += num(u?.outputTokens);
  run.cost += s.cost;
}

function strip(r: UsageRun & { counted?: boolean }): UsageRun {
  const { counted: _c, ...run } = r;
  return run;
}

/** A report's range: `from`/`to` as `YYYY-MM-DD` (UTC days, `to` included) or ms; by default the last 30 days. */
export interface UsageRange {
  from: number;
  to: number;
}

const DAY_MS = 86_400_000;

/**
 * Read `from`, `to` and `by` of a usage query.
 * @throws {Error} with a message for the caller (the route answers 400).
 */
export function parseUsageQuery(
  params: URLSearchParams,
  now = Date.now(),
): UsageRange & { by: UsageBy } {
  const by = (params.get("by") ?? "day") as UsageBy;
  if (!USAGE_BY.includes(by)) throw new Error(`by must be one of ${USAGE_BY.join(", ")}`);
  const today = Date.parse(`${utcDay(now)}T00:00:00Z`);
  const at = (name: string, fallback: number, end: boolean): number => {
    const v = params.get(name);
    if (v === null || v === "") return fallback;
    if (/^\d{4}-\d{2}-\d{2}$/.test(v)) {
      const t = Date.parse(`${v}T00:00:00Z`);
      if (Number.isFinite(t)) return end ? t + DAY_MS : t;
    } else if (/^\d{1,15}$/.test(v)) return Number(v);
    throw new Error(`${name} must be a day (YYYY-MM-DD) or milliseconds`);
  };
  const to = at("to", today + DAY_MS, true);
  const from = at("from", to - 30 * DAY_MS, false);
  if (from >= to) throw new Error("from must be before to");
  if (to - from > MAX_RANGE_DAYS * DAY_MS) throw new Error(`at most ${MAX_RANGE_DAYS} days at once`);
  return { from, to, by };
}

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

interface RunRow {
  sessionId: string;
  startSeq: number;
  startedAt: number;
  person: string;
  model: string | null;
  inputTokens: number;
  outputTokens: number;
  cost: number;
  counted: number;
  open: number;
}

/** A commit of a session's events as the store reports it (`SessionCommit`), as far as usage goes. */
export interface UsageCommit {
  sessionId: string;
  /** The session's highest seq before the commit. */
  after: number;
  lastSeq: number;
  inserted: readonly { seq: number; event?: Readonly<{ ts: number; type: string }> }[];
}

/** One event, as far as counting runs goes. */
interface RunEvent {
  seq: number;
  ts: number;
  type: string;
  payload: Record<string, unknown>;
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
    let run = this.#openRun(sessionId);
    const touch = (r: RunRow) => changed.set(`${r.sessionId}\n${r.startSeq}`, r);
    for (const e of events) {
      if (e.type === "agent_start") {
        if (run) touch({ ...run, open: 0 });
        run = {
          sessionId,
          startSeq: e.seq,
          startedAt: e.ts,
          person: "terminal",
          model: null,
          inputTokens: 0,
          outputTokens: 0,
          cost: 0,
          counted: 0,
          open: 1,
        };
        touch(run);
        continue;
      }
      if (!run) continue; // events before the session's first run
      const p = e.payload;
      const m = p.message as { role?: string; usage?: Record<string, unknown>; model?: unknown } | undefined;
      if (e.type === "message_end" && m?.role === "user") {
        const by = (p.from as { by?: unknown } | undefined)?.by;
        if (run.person !== "terminal" || typeof by !== "string" || !by) continue;
        run.person = by;
      } else if (e.type === "message_end" && m?.role === "assistant" && m.usage) {
        if (!run.counted && typeof m.model === "string" && m.model) run.model = m.model;
        run.counted = 1;
        add(run, m.usage);
      } else if (e.type === "agent_end") {
        if (!run.counted) add(run, p.usage as Record<string, unknown> | undefined);
        run.open = 0;
        touch(run);
        run = null;
        continue;
      } else continue;
      touch(run);
    }
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
              this.#put.run(
                c.sessionId,
                c.startSeq,
                c.startedAt,
                c.person,
                c.model,
                c.inputTokens,
                c.outputTokens,
                c.cost,
                c.counted,
                c.open,
                counted.get(c.sessionId) ?? 0,
              );
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
