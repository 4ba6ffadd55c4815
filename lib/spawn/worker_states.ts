/**
 * What the spawner asks of the worker states, whichever store keeps them: the daemon's own file
 * (`ContainerStates`, synchronous, one daemon) or the rows several replicas share (lib/spawn/
 * shared_worker_states.ts). Reads of one state or all are synchronous (the session list reads one per row);
 * moves are asynchronous and may be a compare-and-set on the state read (`from`): of two replicas moving the
 * same worker at once, one sees `true` and acts on the worker, the other leaves it alone.
 */
import type { ContainerState } from "../protocol.ts";
import type { ContainerMove } from "../storage/session_state_log.ts";
import type { ContainerRow, ContainerStates } from "./containers.ts";

export type { ContainerMove };

/** Every worker's state, for the spawner. */
export interface WorkerStates {
  /** Whether other daemons move these states too (replicas): the spawner then watches every worker. */
  readonly shared: boolean;
  /** One session's worker state as last read, or undefined for a session never spawned. */
  get(sessionId: string): ContainerRow | undefined;
  /** Every state as last read. */
  list(): ContainerRow[];
  /** Every state read now from where they are kept (shared rows), also kept for `get` and `list`. */
  load(): Promise<ContainerRow[]>;
  /** One session's state read now (before a compare-and-set), also kept for `get`. */
  fresh(sessionId: string): Promise<ContainerRow | undefined>;
  /** The logs kept of a session's last worker, or null. */
  logs(sessionId: string): Promise<string | null>;
  /** Move a worker (see `ContainerStates.set`). @returns false, changing nothing, when `from` did not hold. */
  set(sessionId: string, repo: string, state: ContainerState, move?: ContainerMove): Promise<boolean>;
  /** Forget a worker's row. @returns false, changing nothing, when `from` is given and did not hold. */
  delete(sessionId: string, from?: readonly ContainerState[]): Promise<boolean>;
  /** Stop re-reading (shared rows). */
  close(): void;
}

/**
 * The single daemon's states in its own file. Each move is made synchronously when called (so it lands at the
 * same moment as before this interface existed); a `from` check and its write cannot interleave with another.
 */
export function localWorkerStates(states: ContainerStates): WorkerStates {
  const attempt = <T>(f: () => T): Promise<T> => {
    try {
      return Promise.resolve(f());
    } catch (error) {
      return Promise.reject(error);
    }
  };
  return {
    shared: false,
    get: (sessionId) => states.get(sessionId),
    list: () => states.list(),
    load: () => Promise.resolve(states.list()),
    fresh: (sessionId) => Promise.resolve(states.get(sessionId)),
    logs: (sessionId) => attempt(() => states.logs(sessionId)),
    set: (sessionId, repo, state, move = {}) =>
      attempt(() => {
        if (move.from && !move.from.includes(states.get(sessionId)?.state ?? null)) return false;
        const o = {
          ...(move.end !== undefined ? { end: move.end } : {}),
          ...(move.logs !== undefined ? { logs: move.logs } : {}),
        };
        states.set(sessionId, repo, state, o);
        return true;
      }),
    delete: (sessionId, from) =>
      attempt(() => {
        const state = states.get(sessionId)?.state;
        if (from && (state === undefined || !from.includes(state))) return false;
        states.delete(sessionId);
        return true;
      }),
    close() {},
  };
}
