/**
 * Approvals in the daemon's SQLite file, through lib/approval_store.ts itself (the table, its migration and
 * every statement stay there, so the file keeps one schema whichever interface the daemon uses). One daemon
 * owns the file, so a hint is an in-process call to every log on the same handle, after the commit; the sweep
 * stays as the backstop the contract promises and finds rows another process wrote (a sqlite3 shell, a copy).
 *
 * node:sqlite is synchronous: a decision's conditional UPDATE and the read of its outcome run with nothing in
 * between, so a loser reads the winner's row as the winner left it.
 */
import type { DatabaseSync } from "node:sqlite";
import { NotFoundError } from "../errors.ts";
import type { ApprovalSource, ApprovalState } from "../protocol.ts";
import { ApprovalStore } from "../approval_store.ts";
import type { Wakeups } from "./command_queue.ts";
import {
  APPROVAL_SWEEP_MS,
  type ApprovalLog,
  type ApprovalRecord,
  type ApprovalRequest,
  type ApprovalsHint,
  approvalWakeups,
  type Decided,
  type FinalState,
} from "./approval_log.ts";
import { settle } from "./sqlite_sync.ts";

/** A decision's own writes on SQLite: synchronous, on the file's handle, inside the decision's transaction. */
export type SqliteDecisionWrites = (db: DatabaseSync) => void;

/** Every log on a handle, for the in-process hint. */
const logsOf = new WeakMap<DatabaseSync, Set<Wakeups>>();

/** The approval log on a SQLite handle shared with the daemon's `Store` (which stays its owner). */
export class SqliteApprovalLog implements ApprovalLog<SqliteDecisionWrites> {
  readonly kind = "sqlite";
  #db: DatabaseSync;
  #store: ApprovalStore;
  #wakeups: Wakeups;

  /** @param db the store's handle (`store.db`). */
  constructor(db: DatabaseSync, options: { sweepMs?: number } = {}) {
    this.#db = db;
    this.#store = new ApprovalStore(db);
    const ids = db.prepare(
      "SELECT id, sessionId FROM approvals WHERE state = 'pending' ORDER BY createdAt, id",
    );
    this.#wakeups = approvalWakeups(
      () => settle(() => ids.all() as unknown as { id: string; sessionId: string }[]),
      options.sweepMs ?? APPROVAL_SWEEP_MS,
    );
    let logs = logsOf.get(db);
    if (!logs) logsOf.set(db, logs = new Set());
    logs.add(this.#wakeups);
  }

  insert(request: ApprovalRequest): Promise<boolean> {
    return settle(() => this.#hinted(request.sessionId, this.#store.insert(request)));
  }

  get(id: string): Promise<ApprovalRecord | null> {
    return settle(() => this.#store.get(id));
  }

  decide(
    id: string,
    state: FinalState,
    by: string,
    reason: string | null,
    also?: SqliteDecisionWrites,
  ): Promise<Decided> {
    return settle(() => {
      const won = this.#store.decide(id, state, by, reason, also && (() => also(this.#db)));
      const approval = this.#store.get(id);
      if (!approval) throw new NotFoundError(`Approval "${id}" does not exist`);
      this.#hinted(approval.sessionId, won);
      return { won, approval };
    });
  }

  overrule(id: string, state: FinalState, by: string): Promise<void> {
    return settle(() => {
      this.#store.overrule(id, state, by);
      const known = this.#store.get(id);
      if (known) this.#hinted(known.sessionId, true);
    });
  }

  applied(id: string, source: ApprovalSource): Promise<boolean> {
    return settle(() => {
      const done = this.#store.applied(id, source);
      const known = done ? this.#store.get(id) : null;
      if (known) this.#hinted(known.sessionId, true);
      return done;
    });
  }

  pending(): Promise<ApprovalRecord[]> {
    return settle(() => this.#store.pending());
  }

  list(filter: { sessionId?: string; state?: ApprovalState } = {}): Promise<ApprovalRecord[]> {
    return settle(() => this.#store.list(filter));
  }

  deleteSession(sessionId: string): Promise<void> {
    return settle(() => {
      this.#store.deleteSession(sessionId);
      this.#hinted(sessionId, true);
    });
  }

  subscribe(onChange: ApprovalsHint): () => void {
    return this.#wakeups.add(onChange);
  }

  close(): Promise<void> {
    this.#wakeups.stop();
    logsOf.get(this.#db)?.delete(this.#wakeups);
    return Promise.resolve();
  }

  /** After a stored change: tell this daemon's subscribers, once the caller has its answer. */
  #hinted<T>(sessionId: string, changed: T): T {
    if (changed) {
      for (const wakeups of logsOf.get(this.#db) ?? []) queueMicrotask(() => wakeups.hint(sessionId));
    }
    return changed;
  }
}
