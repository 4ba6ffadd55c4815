/**
 * Every worker's state when several replicas share one database (`SessionStateLog`'s `session_containers`
 * rows): a replica spawns, stops, resumes or discards any session's worker, whichever replica started it
 * (every replica reaches the same backend: one Kubernetes API server, or the engine the compose file shares).
 *
 * Each replica keeps a copy in memory, since the session list reads one state per row synchronously. Its own
 * moves update the copy once stored (the row read back); another replica's are found by reading every row
 * (without the logs) again every `WORKER_POLL_MS` (lib/replica/row_copy.ts, as for budgets); the table holds
 * one small row per spawned session, and the log has no change hint. Each row that changed is handed to
 * `changed`, so the session list's row changes live on every replica.
 *
 * A read of every row started before one of this replica's own moves may not see it: its result is dropped
 * (the next read does), so a state just moved here never flickers back (lib/replica/row_copy.ts).
 */
import type { ContainerState } from "../protocol.ts";
import type { ContainerMove, ContainerRow, SessionStateLog } from "../storage/session_state_log.ts";
import type { WorkerStates } from "./worker_states.ts";
import { RowCopy } from "../replica/row_copy.ts";

/** How often other replicas' moves are looked for: every list shows them within this. */
export const WORKER_POLL_MS = 1_000;

/** The shared worker states, with this replica's synchronous copy. */
export class SharedWorkerStates<W> implements WorkerStates {
  readonly shared = true;
  #log: SessionStateLog<W>;
  #changed: (sessionId: string) => void;
  #copy: RowCopy<ContainerRow>;

  /** @param changed told of each session whose worker state changed (here or on another replica) */
  constructor(log: SessionStateLog<W>, changed: (sessionId: string) => void = () => {}) {
    this.#log = log;
    this.#changed = changed;
    this.#copy = new RowCopy({
      readAll: () => log.containers(),
      key: (row) => row.sessionId,
      moved: (was, now) => now ? !sameRow(was, now) : was !== undefined,
      changed: (ids) => ids.forEach((id) => this.#changed(id)),
      what: "worker states",
    });
  }

  /** A copy that starts reading at once (the daemon's: a replica lists every worker from its start). */
  static started<W>(log: SessionStateLog<W>, changed: (sessionId: string) => void): SharedWorkerStates<W> {
    const states = new SharedWorkerStates(log, changed);
    void states.start();
    return states;
  }

  /** Read every row now, then every `pollMs`. Never throws: a failed read is logged and tried again. */
  start(pollMs = WORKER_POLL_MS): Promise<void> {
    return this.#copy.start(pollMs).catch((error) => {
      console.error(`lvmh: worker states not re-read: ${(error as Error).message}`);
    });
  }

  get(sessionId: string): ContainerRow | undefined {
    const row = this.#copy.get(sessionId);
    return row ? { ...row } : undefined;
  }

  list(): ContainerRow[] {
    return [...this.#copy.values()].map((r) => ({ ...r }));
  }

  /** Read every row again (the copy takes them unless a move of this replica's came meanwhile). @throws what
   * the database threw */
  load(): Promise<ContainerRow[]> {
    return this.#copy.refresh();
  }

  fresh(sessionId: string): Promise<ContainerRow | undefined> {
    return this.#copy.write(async () => {
      const row = await this.#log.container(sessionId);
      this.#keep(sessionId, row);
      return row ?? undefined;
    });
  }

  logs(sessionId: string): Promise<string | null> {
    return this.#log.containerLogs(sessionId);
  }

  set(sessionId: string, repo: string, state: ContainerState, move?: ContainerMove): Promise<boolean> {
    return this.#copy.write(async () => {
      const made = await this.#log.setContainer(sessionId, repo, state, move);
      // Made or not, the copy takes the row as it is now (a refused move means the copy was behind).
      this.#keep(sessionId, await this.#log.container(sessionId));
      return made;
    });
  }

  delete(sessionId: string, from?: readonly ContainerState[]): Promise<boolean> {
    return this.#copy.write(async () => {
      const made = await this.#log.deleteContainer(sessionId, from);
      this.#keep(sessionId, made ? null : await this.#log.container(sessionId));
      return made;
    });
  }

  close(): void {
    this.#copy.close();
  }

  #keep(sessionId: string, row: ContainerRow | null): void {
    if (this.#copy.put(sessionId, row)) this.#changed(sessionId);
  }
}

function sameRow(a: ContainerRow | undefined, b: ContainerRow): boolean {
  return !!a && a.state === b.state && a.repo === b.repo && a.exitCode === b.exitCode &&
    a.reason === b.reason && a.updatedAt === b.updatedAt;
}
