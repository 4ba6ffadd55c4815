/**
 * What the command queue tests share: command frames, a wait for a queue's wake-up hint, and a PostgreSQL
 * database opened as two replicas' queues with the event log that gives holders their epochs.
 */
import type { SessionInfo } from "../lib/protocol.ts";
import type { EventLog } from "../lib/storage/event_log.ts";
import { PgEventLog } from "../lib/storage/pg_event_log.ts";
import type { CommandFrame, CommandQueue } from "../lib/storage/command_queue.ts";
import { PgCommandQueue } from "../lib/storage/pg_command_queue.ts";
import { connectPostgres } from "../lib/storage/pg_client.ts";
import { sessionInfo } from "./agent.ts";
import { firstHint } from "./storage_replicas.ts";

/** What the issue promises: a command made on any replica reaches the holder within this. */
export const WAKE_MS = 1_000;

export const info = (id: string) => sessionInfo(id) as SessionInfo;
export const prompt = (sessionId: string, message: string): CommandFrame => ({
  v: 1,
  sessionId,
  seq: 0,
  ts: 1_000,
  type: "prompt",
  promptId: `p-${message}`,
  message,
  deliverAs: "followUp",
});
export const messages = (cmds: { frame: CommandFrame }[]) =>
  cmds.map((c) => (c.frame as { message: string }).message);

/** A database opened for the queue tests: `other` is a second queue object on it. */
export interface OpenedQueues {
  log: EventLog;
  queue: CommandQueue;
  other: CommandQueue;
  /** Insert a command the way another writer would, sending no hint (as if the hint was lost). */
  insertUnhinted(sessionId: string, frame: CommandFrame): Promise<void>;
  close(): Promise<void>;
}

/** Open `url` as the event log and two queues (two replicas), each with pools of its own. */
export async function openPgQueues(
  url: string,
  options: { sweepMs?: number; pingMs?: number } = {},
): Promise<OpenedQueues> {
  const log = await PgEventLog.open(url, { max: 2 });
  const queue = await PgCommandQueue.open(url, { max: 4, ...options });
  const other = await PgCommandQueue.open(url, { max: 4, ...options });
  const raw = connectPostgres(url, { max: 1 });
  return {
    log,
    queue,
    other,
    async insertUnhinted(sessionId, frame) {
      await raw`WITH c AS (UPDATE sessions SET last_cmd_pos = last_cmd_pos + 1 WHERE id = ${sessionId}
          RETURNING last_cmd_pos)
        INSERT INTO commands(session_id, pos, frame, enqueued_at)
          SELECT ${sessionId}, last_cmd_pos, ${JSON.stringify(frame)}, ${Date.now()} FROM c`;
    },
    async close() {
      await queue.close();
      await other.close();
      await log.close();
      await raw.end();
    },
  };
}

/** Resolves with the ms from arming to the first hint for `sessionId`, rejects past the deadline. */
export function hintFor(queue: CommandQueue, sessionId: string, deadlineMs = WAKE_MS): Promise<number> {
  return firstHint(queue, sessionId, deadlineMs);
}
