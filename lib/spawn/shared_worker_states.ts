/**
 * Every worker's state when several replicas share one database (`SessionStateLog`'s `session_containers`
 * rows): a replica spawns, stops, resumes or discards any session's worker, whichever replica started it
 * (every replica reaches the same backend: one Kubernetes API server, or the engine the compose file shares).
 *
 * Each replica keeps a copy in memory, since the session list reads one state per row synchronously. Its own
 * moves update the copy once stored (the row read back); another replica's are found by reading every row
 * (without the logs) again every `WORKER_POLL_MS`, as lib/budget_shared.ts does for budgets; the table holds
 * one small row per spawned session, and the log has no change hint. Each row that changed is handed to
 * `changed`, so the session list's row changes live on every replica.
 *
 * A read of every row started before one of this replica's own moves may not see it: its result is dropped
 * (the next read does), so a state just moved here never flickers back.
 */
import type { ContainerState } from "../protocol.ts";
import type { ContainerMove, ContainerRow, SessionStateLog } from "../storage/session_state_log.ts";
import type { WorkerStates } from "./worker_states.ts";

/** How often other replicas' moves are looked for: every list shows them within this. */
export const WORKER_POLL_MS = 1_000;

/** The shared worker states, with this replica's synchronous copy. */
export class SharedWorkerStates<W> implements WorkerStates {
  readonly shared = true;
  #log: SessionStateLog<W>;
  #rows = new Map<string, ContainerRow>();
  #changed: (sessionId: string) => void;
  /** Bumped by each of this replica's moves: a read of every row started before one is stale. */
  #writes = 0;
  #reading: Promise<ContainerRow[]> | null = null;
  #timer: ReturnType<typeof setInterval> | undefined;

  /** @param changed told of each session whose worker state changed (here or on another replica) */
  constructor(log: SessionStateLog<W>, changed: (sessionId: string) => void = () => {}) {
    this.#log = log;
    this.#changed = changed;
  }

  /** A copy that starts reading at once (the daemon's: a replica lists every worker from its start). */
  static started<W>(log: SessionStateLog<W>, changed: (sessionId: string) => void): SharedWorkerStates<W> {
    const states = new SharedWorkerStates(log, changed);
    void states.start();
    return states;
  }

  /** Read every row now, then every `pollMs`. Never throws: a failed read is logged and tried again. */
  start(pollMs = WORKER_POLL_MS): Promise<void> {
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => void this.#poll(), pollMs);
      Deno.unrefTimer(this.#timer);
    }
    return this.#poll();
  }

  get(sessionId: string): ContainerRow | undefined {
    const row = this.#rows.get(sessionId);
    return row ? { ...row } : undefined;
  }

  list(): ContainerRow[] {
    return [...this.#rows.values()].map((r) => ({ ...r }));
  }

  /** Read every row again (the copy takes them unless a move of this replica's came meanwhile). @throws what
   * the database threw */
  load(): Promise<ContainerRow[]> {
    this.#reading ??= this.#readAll().finally(() => this.#reading = null);
    return this.#reading;
  }

  async fresh(sessionId: string): Promise<ContainerRow | undefined> {
    this.#writes++;
    try {
      const row = await this.#log.container(sessionId);
      this.#keep(sessionId, row);
      return row ?? undefined;
    } finally {
      this.#writes++;
    }
  }

  logs(sessionId: string): Promise<string | null> {
    return this.#log.containerLogs(sessionId);
  }

  async set(sessionId: string, repo: string, state: ContainerState, move?: ContainerMove): Promise<boolean> {
    this.#writes++;
    try {
      const made = await this.#log.setContainer(sessionId, repo, state, move);
      // Made or not, the copy takes the row as it is now (a refused move means the copy was behind).
      this.#keep(sessionId, await this.#log.container(sessionId));
      return made;
    } finally {
      this.#writes++;
    }
  }

  async delete(sessionId: string, from?: readonly ContainerState[]): Promise<boolean> {
    this.#writes++;
    try {
      const made = await this.#log.deleteContainer(sessionId, from);
      this.#keep(sessionId, made ? null : await this.#log.container(sessionId));
      return made;
    } finally {
      this.#writes++;
    }
  }

  close(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  async #poll(): Promise<void> {
    try {
      await this.load();
    } catch (error) {
      // The next period reads again; meanwhile the copy is what was read last.
      console.error(`lvmh: worker states not re-read: ${(error as Error).message}`);
    }
  }

  async #readAll(): Promise<ContainerRow[]> {
    const at = this.#writes;
    const rows = await this.#log.containers();
    if (at !== this.#writes) return rows;
    const now = new Map(rows.map((r) => [r.sessionId, r]));
    const moved: string[] = [];
    for (const [id, row] of now) if (!sameRow(this.#rows.get(id), row)) moved.push(id);
    for (const id of this.#rows.keys()) if (!now.has(id)) moved.push(id);
    this.#rows = now;
    for (const id of moved) this.#changed(id);
    return rows;
  }

  #keep(sessionId: string, row: ContainerRow | null): void {
    const was = this.#rows.get(sessionId);
    if (row) this.#rows.set(sessionId, row);
    else this.#rows.delete(sessionId);
    if (row ? !sameRow(was, row) : was !== undefined) this.#changed(sessionId);
  }
}

function sameRow(a: ContainerRow | undefined, b: ContainerRow): boolean {
  return !!a && a.state === b.state && a.repo === b.repo && a.exitCode === b.exitCode &&
    a.reason === b.reason && a.updatedAt === b.updatedAt;
}
