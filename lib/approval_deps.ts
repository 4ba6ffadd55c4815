/**
 * What the approvals owner (lib/approvals.ts) is handed: the log it works on, what it needs from the rest of
 * the daemon, and its options. Types only, apart from the owner so that its wiring reads on its own.
 */
import type { ServerFrame } from "./protocol.ts";
import type { Command } from "./session_commands.ts";
import type { ApprovalLog, ApprovalRecord } from "./storage/approval_log.ts";
import type { SqliteDecisionWrites } from "./storage/sqlite_approval_log.ts";
import type { PgDecisionWrites } from "./storage/pg_approval_log.ts";

/** What approvals need from the rest of the daemon. */
export interface ApprovalDeps {
  /** Send a command to a session's plugin if it is online; false otherwise. */
  trySend(sessionId: string, command: Command): boolean;
  /** A session's pending count changed. */
  touch(sessionId: string): void;
  /** Tell every browser. */
  broadcast(frame: ServerFrame): void;
  /**
   * A budget card is being approved: store the raise in the transaction that stores the decision (`handle`,
   * the log's own: on SQLite synchronous writes on the daemon's file, on PostgreSQL statements on the
   * decision's transaction, awaited). When it throws or rejects, the decision is not stored either.
   */
  raiseBudget?(sessionId: string, handle: unknown): void | Promise<unknown>;
  /** A budget card was approved (raise stored): tell the plugin, before it hears the answer. */
  budgetApproved?(sessionId: string): void;
}

/** The approval logs this owner works on: the daemon's SQLite file, or PostgreSQL. */
export type AnyApprovalLog = ApprovalLog<SqliteDecisionWrites> | ApprovalLog<PgDecisionWrites>;

/** How the owner starts (`new Approvals`). */
export interface ApprovalsOptions {
  /**
   * What the log holds pending now, when the caller could read it synchronously (the daemon's SQLite file):
   * the cache starts from it, so nothing reads an empty list before `start()` has loaded one.
   */
  pending?: ApprovalRecord[];
}
