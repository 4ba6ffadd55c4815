/**
 * What each session spent, counted from its event log: the first ask reads the whole log once, later asks
 * read only what was added since. Nothing of it is stored, so neither a restart of the daemon nor a
 * reconnect of the plugin can reset a count. The counting rules themselves are `lib/budget_math.ts` (which
 * the plugin shares); this module is the daemon's reading of the `events` table for them.
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import type { Spent } from "./protocol.ts";
import { type CountedEvent, plus, SpentCounter } from "./budget_math.ts";

/** The events that count: the rest of the log is never read here. */
const COUNTED_TYPES = "('message_end','agent_start','agent_end')";

const total0: Spent = { cost: 0, tokens: 0 };

/** The per-session counts, each kept up to the last event it read. */
export class SpendingLog {
  #maxSeq: StatementSync;
  #scan: StatementSync;
  /** Per session: the log counted so far (up to `seq`). */
  #counted = new Map<string, { seq: number; counter: SpentCounter }>();

  constructor(db: DatabaseSync) {
    this.#maxSeq = db.prepare("SELECT COALESCE(MAX(seq), 0) AS seq FROM events WHERE sessionId = ?");
    this.#scan = db.prepare(
      `SELECT seq, ts, type, payload FROM events WHERE sessionId = ? AND seq > ? AND seq <= ?
        AND type IN ${COUNTED_TYPES} ORDER BY seq`,
    );
  }

  /** The session's count, brought up to its last event. */
  counter(sessionId: string): SpentCounter {
    let c = this.#counted.get(sessionId);
    if (!c) this.#counted.set(sessionId, c = { seq: 0, counter: new SpentCounter() });
    const max = (this.#maxSeq.get(sessionId) as { seq: number }).seq;
    if (max <= c.seq) return c.counter;
    const rows = this.#scan.all(sessionId, c.seq, max) as { ts: number; type: string; payload: string }[];
    for (const r of rows) {
      let p: Partial<CountedEvent>;
      try {
        p = JSON.parse(r.payload);
      } catch {
        continue;
      }
      c.counter.add({ ts: r.ts, type: r.type, message: p.message, usage: p.usage });
    }
    c.seq = max;
    return c.counter;
  }

  /** Whether the session was counted since the daemon started. */
  has(sessionId: string): boolean {
    return this.#counted.has(sessionId);
  }

  /** The sessions counted since the daemon started. */
  sessions(): Iterable<string> {
    return this.#counted.keys();
  }

  forget(sessionId: string): void {
    this.#counted.delete(sessionId);
  }

  /** What every session counted so far spent on a UTC day (without reading their logs further). */
  spentOn(day: string): Spent {
    let total: Spent = { cost: 0, tokens: 0 };
    for (const c of this.#counted.values()) total = plus(total, c.counter.byDay.get(day) ?? total0);
    return total;
  }
}
