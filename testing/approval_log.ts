/**
 * What the approval log tests share: a database opened as two replicas' logs (SQLite: a real file under the
 * daemon's `Store`; PostgreSQL: a database on a real server), reopened as after a restart, with a decision's
 * own writes (a stand-in for a budget card's raise, in a table of the test's own) and a writer that sends no
 * hint (as if the hint was lost).
 */
import { DatabaseSync } from "node:sqlite";
import { Store } from "../lib/store.ts";
import type { ApprovalLog, ApprovalRequest } from "../lib/storage/approval_log.ts";
import { SqliteApprovalLog, type SqliteDecisionWrites } from "../lib/storage/sqlite_approval_log.ts";
import { PgApprovalLog, type PgDecisionWrites } from "../lib/storage/pg_approval_log.ts";
import { connectPostgres } from "../lib/storage/pg_client.ts";
import { firstHint } from "./storage_replicas.ts";

/** A change stored on one replica reaches the others' subscribers within this. */
export const HINT_MS = 1_000;

/** Two logs on one database, with what the tests do behind their backs. */
export interface OpenedLogs<Also> {
  log: ApprovalLog<Also>;
  other: ApprovalLog<Also>;
  /** A decision's own writes: one row for the session in the test's table. */
  raise(sessionId: string): Also;
  /** The same row written, then a failure (the decision must not be stored either). */
  failingRaise(sessionId: string): Also;
  /** How many raises of the session are stored. */
  raised(sessionId: string): Promise<number>;
  /** Insert a pending approval the way another writer would, sending no hint. */
  insertUnhinted(request: ApprovalRequest): Promise<void>;
  /** Close both logs and open them again on the same database, as a restarted daemon does. */
  reopen(): Promise<void>;
  close(): Promise<void>;
}

/** Any store's opened logs: each case only passes a log's own writes back to it. */
// deno-lint-ignore no-explicit-any
export type AnyLogs = OpenedLogs<any>;

const UNHINTED_SQLITE = "INSERT INTO approvals(id, sessionId, toolCallId, toolName, args, createdAt, kind) " +
  "VALUES (?, ?, ?, ?, ?, ?, ?)";

/** A fresh SQLite file in a temp dir, with two logs on the store's handle (one daemon, two of its parts). */
export async function openSqliteLogs(): Promise<OpenedLogs<SqliteDecisionWrites>> {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-approvals-" });
  const path = `${dir}/lvmh.db`;
  let store = new Store(path);
  const open = () => {
    store.db.exec("CREATE TABLE IF NOT EXISTS test_raises(sessionId TEXT NOT NULL)");
    return [new SqliteApprovalLog(store.db), new SqliteApprovalLog(store.db)];
  };
  const opened: OpenedLogs<SqliteDecisionWrites> = {
    log: null!,
    other: null!,
    raise: (sessionId) => (db) => void db.prepare("INSERT INTO test_raises VALUES (?)").run(sessionId),
    failingRaise: (sessionId) => (db) => {
      db.prepare("INSERT INTO test_raises VALUES (?)").run(sessionId);
      throw new Error("the raise failed");
    },
    raised: (sessionId) =>
      Promise.resolve(
        (store.db.prepare("SELECT count(*) AS n FROM test_raises WHERE sessionId = ?").get(sessionId) as {
          n: number;
        }).n,
      ),
    insertUnhinted(a) {
      // Another handle on the file: a writer this process's in-process hint knows nothing of.
      const db = new DatabaseSync(path);
      try {
        db.prepare(UNHINTED_SQLITE).run(
          a.id,
          a.sessionId,
          a.toolCallId,
          a.toolName,
          JSON.stringify(a.args),
          a.createdAt,
          a.kind ?? null,
        );
      } finally {
        db.close();
      }
      return Promise.resolve();
    },
    async reopen() {
      await opened.log.close();
      await opened.other.close();
      store.close();
      store = new Store(path);
      [opened.log, opened.other] = open();
    },
    async close() {
      await opened.log.close();
      await opened.other.close();
      store.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
  [opened.log, opened.other] = open();
  return opened;
}

/** Two replicas' logs on the PostgreSQL database at `url`, each with pools of its own. */
export async function openPgLogs(
  url: string,
  options: { sweepMs?: number } = {},
): Promise<OpenedLogs<PgDecisionWrites>> {
  const open = async () => [
    await PgApprovalLog.open(url, { max: 4, ...options }),
    await PgApprovalLog.open(url, { max: 4, ...options }),
  ];
  const raw = connectPostgres(url, { max: 1 });
  const opened: OpenedLogs<PgDecisionWrites> = {
    log: null!,
    other: null!,
    raise: (sessionId) => (tx) => tx`INSERT INTO test_raises VALUES (${sessionId})`,
    failingRaise: (sessionId) => async (tx) => {
      await tx`INSERT INTO test_raises VALUES (${sessionId})`;
      throw new Error("the raise failed");
    },
    async raised(sessionId) {
      const [row] = await raw`SELECT count(*)::integer AS n FROM test_raises WHERE session_id = ${sessionId}`;
      return row.n as number;
    },
    async insertUnhinted(a) {
      await raw`INSERT INTO approvals(id, session_id, tool_call_id, tool_name, args, created_at, kind)
        VALUES (${a.id}, ${a.sessionId}, ${a.toolCallId}, ${a.toolName}, ${JSON.stringify(a.args)},
          ${a.createdAt}, ${a.kind ?? null})`;
    },
    async reopen() {
      await opened.log.close();
      await opened.other.close();
      [opened.log, opened.other] = await open();
    },
    async close() {
      await opened.log.close();
      await opened.other.close();
      await raw.end();
    },
  };
  [opened.log, opened.other] = await open();
  await raw`CREATE TABLE IF NOT EXISTS test_raises(session_id text NOT NULL)`;
  return opened;
}

/** A tool call's request. */
export function request(
  id: string,
  sessionId: string,
  createdAt: number,
  extra: Partial<ApprovalRequest> = {},
) {
  return {
    id,
    sessionId,
    toolCallId: `call-${id}`,
    toolName: "bash",
    args: { command: `echo ${id}`, n: [1, 2] },
    createdAt,
    ...extra,
  } satisfies ApprovalRequest;
}

/** Resolves with the ms from arming to the first hint for `sessionId`, rejects past the deadline. */
export function hintFor(
  log: ApprovalLog<unknown>,
  sessionId: string,
  deadlineMs = HINT_MS,
): Promise<number> {
  return firstHint(log, sessionId, deadlineMs);
}
