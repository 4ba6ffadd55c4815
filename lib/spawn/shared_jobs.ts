/**
 * The spawn job list when several replicas share one database: each replica's jobs stay its own (its spawner
 * follows them, as on one daemon), are written to PostgreSQL (lib/storage/pg_spawn_job_log.ts) after every
 * change, and `list()` is this replica's jobs and a copy of the others', newest first, bounded by `MAX_JOBS`.
 * So a browser or CLI on any replica sees every spawn, and a GitLab hook on any replica finds the session that
 * works on a branch (lib/hooks/find_session.ts).
 *
 * The copy is read again every `JOBS_POLL_MS`, as lib/budget_shared.ts and shared_worker_states.ts do: a job
 * moves a few times in its life, the newest `MAX_JOBS` rows are one small indexed read, and a poll needs no
 * listener connection or missed-hint sweep (a NOTIFY hint, as pg_event_feed.ts has, would save at most a
 * second). A read that differs from the copy is published (`spawn_status`) on this replica.
 *
 * Writes of one job go one at a time, each the job as it is when it goes (a change made while one is on its
 * way is written after it); the row also refuses a write older than itself.
 *
 * A replica that stops (its heartbeat stale, or gone after a clean stop) cannot finish its spawns: every
 * other replica lists its jobs still in progress as `failed` ("replica r0 stopped before this spawn
 * finished"), decided at each read, so a replica that was only cut off for a while shows them again as they
 * are. Its `running` jobs keep their state: the worker may still run, and the leader watches it (the
 * session's worker state says what became of it). A restarted replica (same id) takes back its rows: those
 * in progress it writes `failed`, the others it follows again as its own.
 *
 * A worker found again by label at a start (recoverJobs lists every worker of the shared backend) is `found`:
 * hidden wherever its session has a spawned job, so a spawn is listed once.
 */
import type { ServerFrame, SpawnJob, SpawnState } from "../protocol.ts";
import type { Sql } from "../storage/pg_client.ts";
import { PgSpawnJobLog, type SharedJobRow } from "../storage/pg_spawn_job_log.ts";
import { HOLDER_STALE_MS } from "../replica/holders.ts";
import type { Leading } from "../replica/leader.ts";
import { MAX_JOBS, SpawnJobs } from "./jobs.ts";

/** How often the other replicas' jobs are read: every list shows a change within this. */
export const JOBS_POLL_MS = 1_000;
/** How often the leader bounds the table. */
export const JOBS_PRUNE_MS = 60_000;

const IN_PROGRESS: readonly SpawnState[] = ["queued", "cloning", "building", "starting"];

/** Options of the shared list (the timings are for tests). */
export interface SharedJobsOptions {
  /** Whether this replica leads (it then prunes the table). */
  leads?: () => boolean;
  pollMs?: number;
  pruneMs?: number;
  /** A replica seen longer ago than this is stopped. */
  staleMs?: number;
}

/** This replica's jobs, written to the shared table, and a copy of the other replicas'. */
export class SharedSpawnJobs extends SpawnJobs {
  #log: PgSpawnJobLog;
  #replica: string;
  #options: SharedJobsOptions;
  #others: SharedJobRow[] = [];
  /** This replica's jobs found again by label (`add` in a state other than `queued`). */
  #found = new Set<string>();
  #writing = new Map<string, Promise<void>>();
  #again = new Set<string>();
  #unwritten = new Set<string>();
  #reading = false;
  #ready: Promise<void> = Promise.resolve();
  #timers: ReturnType<typeof setInterval>[] = [];

  /**
   * @param replica this replica's id (`LVMH_REPLICA_ID`).
   * @param publish called with the whole list after every change, here or on another replica.
   */
  constructor(
    log: PgSpawnJobLog,
    replica: string,
    publish: (jobs: SpawnJob[]) => void,
    options: SharedJobsOptions = {},
  ) {
    super(publish);
    this.#log = log;
    this.#replica = replica;
    this.#options = options;
  }

  /** A list that takes back its rows and starts reading the others' at once (the daemon's). */
  static started(
    log: PgSpawnJobLog,
    replica: string,
    publish: (jobs: SpawnJob[]) => void,
    options: SharedJobsOptions = {},
  ): SharedSpawnJobs {
    const jobs = new SharedSpawnJobs(log, replica, publish, options);
    jobs.start();
    return jobs;
  }

  /** The daemon's list on the replicas' pool: published to its browsers, pruned while it leads. */
  static forReplica(
    sql: Sql,
    replica: string,
    hub: { broadcast(frame: ServerFrame): void },
    leading: Leading,
  ): SharedSpawnJobs {
    return SharedSpawnJobs.started(
      new PgSpawnJobLog(sql),
      replica,
      (jobs) => hub.broadcast({ type: "spawn_status", jobs }),
      { leads: () => leading.isLeader() },
    );
  }

  /** Take back this replica's rows of before a restart, then read the others' every `pollMs`. */
  start(): Promise<void> {
    this.#ready = this.#takeBack().then(() => this.refresh());
    const poll = setInterval(() => void this.refresh(), this.#options.pollMs ?? JOBS_POLL_MS);
    const prune = setInterval(() => void this.#prune(), this.#options.pruneMs ?? JOBS_PRUNE_MS);
    for (const t of [poll, prune]) Deno.unrefTimer(t);
    this.#timers.push(poll, prune);
    return this.#ready;
  }

  override ready(): Promise<void> {
    return this.#ready;
  }

  override add(job: SpawnJob): void {
    if (job.state !== "queued") this.#found.add(job.id);
    super.add(job);
    this.#write(job);
  }

  override update(job: SpawnJob, state: SpawnState, patch: Partial<SpawnJob> = {}): void {
    const before = job.updatedAt;
    super.update(job, state, patch);
    // Each write's time past the last one's: a change in the same millisecond (or after the clock stepped
    // back) would be refused by the row, and other replicas tell a change by it.
    job.updatedAt = Math.max(job.updatedAt, before + 1);
    this.#write(job);
  }

  /** This replica's jobs and the others', newest first, at most `MAX_JOBS`. */
  override list(): SpawnJob[] {
    const entries = [
      ...this.own().map((job) => ({ job, found: this.#found.has(job.id) })),
      ...this.#others.map((r) => ({ job: shown(r), found: r.found })),
    ];
    const spawned = new Set(entries.filter((e) => !e.found).map((e) => e.job.sessionId));
    const listed = new Set<string>();
    const jobs: SpawnJob[] = [];
    for (const e of entries) {
      if (e.found && (spawned.has(e.job.sessionId) || listed.has(e.job.sessionId))) continue;
      if (e.found) listed.add(e.job.sessionId);
      jobs.push(e.job);
    }
    return jobs.sort((a, b) => b.createdAt - a.createdAt).slice(0, MAX_JOBS);
  }

  /** Read the other replicas' jobs again (and write again what failed to be written); publish a change. */
  async refresh(): Promise<void> {
    if (this.#reading) return;
    this.#reading = true;
    try {
      for (const job of this.own()) if (this.#unwritten.has(job.id)) this.#write(job);
      const rows = await this.#log.others(this.#replica, this.#options.staleMs ?? HOLDER_STALE_MS, MAX_JOBS);
      const key = (rs: SharedJobRow[]) =>
        rs.map((r) => `${r.job.id} ${r.job.updatedAt} ${r.job.state} ${r.live}`).join();
      if (key(rows) === key(this.#others)) return;
      this.#others = rows;
      this.publish();
    } catch (error) {
      // The next period reads again; meanwhile the copy is what was read last.
      console.error(`lvmh: other replicas' spawn jobs not read: ${(error as Error).message}`);
    } finally {
      this.#reading = false;
    }
  }

  /** Resolves once every write begun so far is done (or failed). */
  async flushed(): Promise<void> {
    while (this.#writing.size) await Promise.all(this.#writing.values());
  }

  /** Stop reading and pruning; resolves once the writes begun are done (the pool closes after). */
  override async close(): Promise<void> {
    for (const t of this.#timers) clearInterval(t);
    this.#timers = [];
    await this.flushed();
  }

  /** Write the job as it is now; a write on its way first finishes, and the newest state goes after it. */
  #write(job: SpawnJob): void {
    if (this.#writing.has(job.id)) {
      this.#again.add(job.id);
      return;
    }
    const run = async () => {
      do {
        this.#again.delete(job.id);
        try {
          await this.#log.put(this.#replica, { ...job }, this.#found.has(job.id));
          this.#unwritten.delete(job.id);
        } catch (error) {
          // Written again at the next read (or with the job's next change).
          this.#unwritten.add(job.id);
          console.error(`lvmh: spawn job ${job.id} not shared: ${(error as Error).message}`);
          return;
        }
      } while (this.#again.has(job.id));
    };
    this.#writing.set(job.id, run().finally(() => this.#writing.delete(job.id)));
  }

  /** Follow again this replica's jobs of before a restart; those it was running cannot finish: failed. */
  async #takeBack(): Promise<void> {
    try {
      const rows = await this.#log.own(this.#replica, MAX_JOBS);
      for (const { job, found } of rows.reverse()) {
        if (found) this.#found.add(job.id);
        this.keep(job);
        if (IN_PROGRESS.includes(job.state)) {
          Object.assign(job, {
            state: "failed",
            error: `replica ${this.#replica} restarted before this spawn finished`,
            updatedAt: Math.max(Date.now(), job.updatedAt + 1),
          });
          this.#write(job);
        }
      }
      if (rows.length) this.publish();
    } catch (error) {
      // Not fatal: the jobs of before stay as they were in the table, and this replica starts with none.
      console.error(`lvmh: spawn jobs of before the restart not taken back: ${(error as Error).message}`);
    }
  }

  async #prune(): Promise<void> {
    if (!this.#options.leads?.()) return;
    try {
      await this.#log.prune(MAX_JOBS);
    } catch (error) {
      console.error(`lvmh: old spawn jobs not pruned: ${(error as Error).message}`);
    }
  }
}

/** Another replica's job as this one lists it: one in progress whose replica stopped is failed. */
function shown(row: SharedJobRow): SpawnJob {
  if (row.live || !IN_PROGRESS.includes(row.job.state)) return row.job;
  return { ...row.job, state: "failed", error: `replica ${row.replica} stopped before this spawn finished` };
}
