/**
 * The working-copy records of several replicas on one database: every read and write goes to the shared
 * `session_workspaces` rows (lib/storage/session_state_log.ts), so a session spawned through one replica is
 * shipped, diffed or resumed through any other. No copy is kept: every reader is async already (a ship step,
 * a diff, a spawn step), and a record is read once per such request, beside a helper container or a GitLab
 * call that costs far more than the row.
 */
import type { WorkspaceBook, WorkspaceRecord, WorkspaceStart } from "./workspaces.ts";
import type { SessionStateLog } from "./storage/session_state_log.ts";

/** What the records need of the shared log. */
type Log = Pick<SessionStateLog<unknown>, "recordWorkspace" | "workspace" | "deleteWorkspace">;

/** The working-copy records on the shared log (`app.workspaces` in replica mode). */
export class SharedWorkspaces implements WorkspaceBook {
  #log: Log;

  constructor(log: Log) {
    this.#log = log;
  }

  /**
   * Record a session's working copy; the first record stands, whichever replica wrote it.
   * @throws {Error} when `baseSha` is not a full sha or a field is empty; what the database throws.
   */
  async record(sessionId: string, w: WorkspaceStart, now = Date.now()): Promise<void> {
    await this.#log.recordWorkspace(sessionId, w, now);
  }

  /** A session's working copy, or undefined. */
  async get(sessionId: string): Promise<WorkspaceRecord | undefined> {
    return (await this.#log.workspace(sessionId)) ?? undefined;
  }

  /** Forget a deleted session's record on the shared database (every replica's readers with it). */
  async sessionDeleted(sessionId: string): Promise<void> {
    await this.#log.deleteWorkspace(sessionId);
  }
}
