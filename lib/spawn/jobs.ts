/**
 * The spawn jobs the daemon knows, newest first, bounded; every change is handed to `publish` (the
 * daemon broadcasts it as a `spawn_status` frame).
 */
import type { SpawnJob, SpawnState } from "../protocol.ts";

/** Jobs kept for the status list; the oldest finished ones go first. */
export const MAX_JOBS = 200;

/** The in-memory job list. */
export class SpawnJobs {
  #jobs = new Map<string, SpawnJob>();

  #publish: (jobs: SpawnJob[]) => void;

  /** @param publish called with the whole list after every change. */
  constructor(publish: (jobs: SpawnJob[]) => void) {
    this.#publish = publish;
  }

  /** Every job, newest first. */
  list(): SpawnJob[] {
    return [...this.#jobs.values()].sort((a, b) => b.createdAt - a.createdAt);
  }

  /** Add a job (dropping the oldest finished one beyond `MAX_JOBS`) and publish. */
  add(job: SpawnJob): void {
    this.#jobs.set(job.id, job);
    if (this.#jobs.size > MAX_JOBS) {
      const oldest = this.list().reverse();
      const drop = oldest.find((j) => j.state === "failed" || j.state === "stopped") ?? oldest[0];
      this.#jobs.delete(drop.id);
    }
    this.#publish(this.list());
  }

  /** Move a job to `state` (with other fields from `patch`) and publish. */
  update(job: SpawnJob, state: SpawnState, patch: Partial<SpawnJob> = {}): void {
    Object.assign(job, patch, { state, updatedAt: Date.now() });
    this.#publish(this.list());
  }

  /** Jobs of one session (a session has one, but a recovered one may join a failed earlier attempt). */
  forSession(sessionId: string): SpawnJob[] {
    return [...this.#jobs.values()].filter((j) => j.sessionId === sessionId);
  }

  /** Jobs in one state. */
  inState(state: SpawnState): SpawnJob[] {
    return [...this.#jobs.values()].filter((j) => j.state === state);
  }
}
