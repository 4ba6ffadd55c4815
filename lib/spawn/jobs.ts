/**
 * The spawn jobs the daemon knows, newest first, bounded; every change is handed to `publish` (the
 * daemon broadcasts it as a `spawn_status` frame). With replicas, lib/spawn/shared_jobs.ts extends it: this
 * replica's jobs stay here, and `list()` adds the other replicas'.
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
    return this.own();
  }

  /** This daemon's own jobs, newest first (the ones its spawner follows). */
  own(): SpawnJob[] {
    return [...this.#jobs.values()].sort((a, b) => b.createdAt - a.createdAt);
  }

  /** Add a job (dropping the oldest finished one beyond `MAX_JOBS`) and publish. */
  add(job: SpawnJob): void {
    this.keep(job);
    this.publish();
  }

  /** Move a job to `state` (with other fields from `patch`) and publish. */
  update(job: SpawnJob, state: SpawnState, patch: Partial<SpawnJob> = {}): void {
    Object.assign(job, patch, { state, updatedAt: Date.now() });
    this.publish();
  }

  /** Jobs of one session (a session has one, but a recovered one may join a failed earlier attempt). */
  forSession(sessionId: string): SpawnJob[] {
    return [...this.#jobs.values()].filter((j) => j.sessionId === sessionId);
  }

  /** Jobs in one state. */
  inState(state: SpawnState): SpawnJob[] {
    return [...this.#jobs.values()].filter((j) => j.state === state);
  }

  /** Resolves once the list may be added to (the shared one first takes back its rows of before a restart). */
  ready(): Promise<void> {
    return Promise.resolve();
  }

  /** Stop whatever the list runs in the background (nothing here); resolves once its writes are done. */
  close(): Promise<void> {
    return Promise.resolve();
  }

  /** Add a job without publishing, dropping the oldest finished one beyond `MAX_JOBS`. */
  protected keep(job: SpawnJob): void {
    this.#jobs.set(job.id, job);
    if (this.#jobs.size > MAX_JOBS) {
      const oldest = this.own().reverse();
      const drop = oldest.find((j) => j.state === "failed" || j.state === "stopped") ?? oldest[0];
      this.#jobs.delete(drop.id);
    }
  }

  /** Hand the whole list to `publish`. */
  protected publish(): void {
    this.#publish(this.list());
  }
}
