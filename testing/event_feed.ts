/**
 * What the event feed tests and benchmark share: a store opened as two replicas (A appends and announces, B
 * follows), and a recorder of what B's follower is handed that checks order, gaps and repeats per session and
 * times each event from the moment A's append resolved.
 */
import type { AgentEvent, SessionInfo } from "../lib/protocol.ts";
import { Store } from "../lib/store.ts";
import type { EventLog } from "../lib/storage/event_log.ts";
import { SqliteEventLog } from "../lib/storage/sqlite_event_log.ts";
import { PgEventLog } from "../lib/storage/pg_event_log.ts";
import type { EventFeed, FeedBatch, SessionChange } from "../lib/storage/event_feed.ts";
import { SqliteEventFeed } from "../lib/storage/sqlite_event_feed.ts";
import { PgEventFeed } from "../lib/storage/pg_event_feed.ts";
import { sessionInfo } from "./agent.ts";

/** What the issue promises: an event committed on one replica is live on every other within this. */
export const LIVE_MS = 1_000;

export const info = (id: string) => sessionInfo(id) as SessionInfo;
/** `n` events numbered by the log (seq 0). */
export const notes = (sessionId: string, n: number, text = "x") =>
  Array.from(
    { length: n },
    () => ({ v: 1, sessionId, seq: 0, ts: 5_000, type: "session_notice", text }),
  ) as unknown as AgentEvent[];

/** Two replicas on one database: A writes (as the sessions' holder), B reads. */
export interface Replicas {
  logA: EventLog;
  logB: EventLog;
  feedA: EventFeed;
  feedB: EventFeed;
  /** Create a session on A (announced) and become its holder. */
  create(sessionId: string): Promise<void>;
  /** Append on A as the holder; `announce: false` leaves the hint out (a lost hint). @returns the lastSeq. */
  append(sessionId: string, events: AgentEvent[], options?: { announce?: boolean }): Promise<number>;
  close(): Promise<void>;
}

function replicas(
  logA: EventLog,
  logB: EventLog,
  feedA: EventFeed,
  feedB: EventFeed,
  done: () => Promise<void>,
) {
  const epochs = new Map<string, number>();
  const r: Replicas = {
    logA,
    logB,
    feedA,
    feedB,
    async create(sessionId) {
      await logA.ensureSession(info(sessionId));
      feedA.announce({ sessionId, lastSeq: 0 });
      epochs.set(sessionId, await logA.claimHolder(sessionId, "replica-a"));
    },
    async append(sessionId, events, options = {}) {
      const commit = await logA.append(sessionId, events, { epoch: epochs.get(sessionId) ?? 0 });
      if (options.announce !== false) feedA.announce(commit);
      return commit.lastSeq;
    },
    async close() {
      await feedA.close();
      await feedB.close();
      await done();
    },
  };
  return r;
}

/** One SQLite file, one log, two feed objects on its handle. */
export async function sqliteReplicas(options: { sweepMs?: number } = {}): Promise<Replicas> {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-feed-" });
  const store = new Store(`${dir}/lvmh.db`);
  const log = new SqliteEventLog(store);
  return replicas(
    log,
    log,
    new SqliteEventFeed(store, options),
    new SqliteEventFeed(store, options),
    async () => {
      store.close();
      await Deno.remove(dir, { recursive: true });
    },
  );
}

/** Two PostgreSQL replicas on `url`: each a log and a feed with pools of their own. */
export async function pgReplicas(url: string, options: { sweepMs?: number } = {}): Promise<Replicas> {
  const logA = await PgEventLog.open(url, { max: 4 });
  const logB = await PgEventLog.open(url, { max: 2 });
  const feedA = await PgEventFeed.open(url, { max: 2, ...options });
  const feedB = await PgEventFeed.open(url, { max: 4, ...options });
  return replicas(logA, logB, feedA, feedB, async () => {
    await logA.close();
    await logB.close();
  });
}

/** Every batch and session change a follower was handed, checked as they come. */
export class Recorder {
  /** Per session: the seqs handed over, in order. */
  seqs = new Map<string, number[]>();
  changes: SessionChange[] = [];
  /** Broken promises: a batch whose `after` is not the last seq handed, a seq out of order or repeated. */
  faults: string[] = [];
  /** ms from the append resolving on A to the event being handed on B (0 when B was first). */
  latencies: number[] = [];
  /** When A's append of `session:seq` resolved (set by the writer). */
  committedAt = new Map<string, number>();

  onEvents = (batch: FeedBatch): void => {
    const now = performance.now();
    const seen = this.seqs.get(batch.sessionId) ?? [];
    this.seqs.set(batch.sessionId, seen);
    let last = seen.at(-1) ?? batch.after;
    if (seen.length && batch.after !== seen.at(-1)) {
      this.faults.push(`${batch.sessionId}: batch after ${batch.after}, last handed ${seen.at(-1)}`);
    }
    for (const row of batch.events) {
      if (row.sessionId !== batch.sessionId) {
        this.faults.push(`${row.sessionId} row in ${batch.sessionId} batch`);
      }
      if (row.seq <= last) this.faults.push(`${batch.sessionId}: seq ${row.seq} after ${last}`);
      last = row.seq;
      seen.push(row.seq);
      const at = this.committedAt.get(`${batch.sessionId}:${row.seq}`);
      if (at !== undefined) this.latencies.push(Math.max(0, now - at));
      else this.pendingTimes.set(`${batch.sessionId}:${row.seq}`, now);
    }
  };

  /** Handed before A's append resolved: the latency is 0 once the writer records the commit. */
  pendingTimes = new Map<string, number>();

  onSessions = (change: SessionChange): void => {
    this.changes.push(change);
  };

  /** The writer's side: A's append of `seqs` resolved now. */
  committed(sessionId: string, seqs: Iterable<number>): void {
    const now = performance.now();
    for (const seq of seqs) {
      const key = `${sessionId}:${seq}`;
      if (this.pendingTimes.delete(key)) this.latencies.push(0);
      else this.committedAt.set(key, now);
    }
  }

  count(sessionId: string): number {
    return this.seqs.get(sessionId)?.length ?? 0;
  }
}

/** p50, p99 and max of `values` (ms). */
export function percentiles(values: number[]): { p50: number; p99: number; max: number } {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
  return { p50: at(0.5), p99: at(0.99), max: sorted.at(-1) ?? NaN };
}

/** `1, 2, …, n`. */
export const upTo = (n: number, from = 1) => Array.from({ length: n - from + 1 }, (_, i) => from + i);
