/**
 * The merge requests of sessions when several replicas share one database: `MergeRequests`' owner
 * (lib/merge_requests.ts: ship, follow, tell the listeners) over the shared record (`MergeRequestLog`), so a
 * session spawned through one replica is shipped, refreshed and followed through any other.
 *
 * Every write is a compare-and-set on the row it was computed from: a push moves the pushed sha only from the
 * sha it pushed over (`updateIf`), and a read of GitLab is saved with its pipeline marks only over the row the
 * marks were decided from (`saveIf`). A replica whose save lost reads the row that won and decides again, so a
 * pipeline is announced, and a failed one prompted for, by one replica once.
 *
 * The session list reads each row's merge request synchronously (`summary`), on every replica, so each keeps a
 * copy of every record in memory: its own writes update it once stored, and every `COPY_POLL_MS` it reads all
 * rows again (one small row per shipped session; the log has no change hint) and tells `changed` which
 * sessions' summaries moved, so their list rows go out to this replica's browsers. As lib/replica/row_copy.ts
 * does, a read of all rows that started before one of this replica's writes is dropped, so a row never flickers
 * back.
 * Ship, view, comments and the follower read the shared row itself.
 *
 * The follower (`follow`) reads open merge requests from GitLab on the leader only (`leads`): the records
 * are the deployment's, so one replica following them is enough, and GitLab is asked once per merge request.
 */
import type { Gitlab } from "./gitlab.ts";
import type { GitlabMergeRequests } from "./gitlab_merge_requests.ts";
import type { WorkspaceBook } from "./workspaces.ts";
import type { MergeRequestComment, MergeRequestView, SessionMergeRequest } from "./protocol.ts";
import { ConflictError, NotFoundError } from "./errors.ts";
import type { ShipRequest, ShipWork } from "./ship_work.ts";
import { reviewComments } from "./merge_request_review.ts";
import { NotConnectedError } from "./merge_request_errors.ts";
import { type Fields, fieldsOf, fromRow, type Row, summaryOf, toView } from "./merge_request_record.ts";
import type { MergeRequestChange } from "./merge_request_change.ts";
import { type MergeRequestSummary, type ShipRecord, shipSession } from "./merge_request_ship.ts";
import type { MergeRequestLog } from "./storage/merge_request_log.ts";
import { readOf } from "./merge_request_read.ts";
import { type MergeRequests, POLL_BATCH, POLL_MS, REFRESH_MS } from "./merge_requests.ts";
import { createKeyedLock } from "./spawn/lock.ts";
import { RowCopy } from "./replica/row_copy.ts";

/** `app.mergeRequests`: the daemon's own file alone, the shared database with replicas. */
export type AnyMergeRequests = MergeRequests | SharedMergeRequests;

/** How often another replica's change of a record is looked for: the session list shows it within this. */
export const COPY_POLL_MS = 1_000;
/** A save that lost its compare-and-set this many times running gives up (GitLab is read again later). */
const SAVE_ATTEMPTS = 3;

/** A listener of changes; an in-transaction one gets the store's handle of the save's transaction. */
type Listener = (change: MergeRequestChange, handle?: unknown) => void | Promise<void>;

/** The merge requests of sessions on the replicas' shared database (`app.mergeRequests` in replica mode). */
export class SharedMergeRequests<Also = unknown> {
  #log: MergeRequestLog<Also>;
  /** Every record, as last read or written by this replica (the session list's summaries). */
  #copy: RowCopy<Row>;
  #changed: (sessionIds: string[]) => void = () => {};
  /** One ship at a time per session on this replica; across replicas the pushed sha's compare-and-set. */
  #shipping = createKeyedLock();
  #shipRecord: ShipRecord = {
    row: async (id) => (await this.#log.row(id)) ?? undefined,
    pushed: (id, repo, branch, sha, lease) => this.#pushed(id, { repo, sourceBranch: branch, sha }, lease),
    save: (id, mr) => this.#write(id, () => fieldsOf(mr)),
    get: async (id) => this.#viewOf(await this.#log.row(id)),
  };
  #listeners = new Set<Listener>();
  #inTransaction = new Set<Listener>();
  /** Refreshes from GitLab in flight, per session: a second ask joins the first. */
  #refreshing = new Map<string, Promise<void>>();
  /** Reads of GitLab a hook's event started after its caller's answer (awaited by `close`). */
  #pending = new Set<Promise<void>>();
  #poller: ReturnType<typeof setInterval> | undefined;
  #polling: Promise<void> | null = null;
  #closed = false;
  /** Aborted by `close`: a read of GitLab in flight ends then, not after its 15 s bound. */
  #closing = new AbortController();

  constructor(
    log: MergeRequestLog<Also>,
    private deps: {
      workspaces: Pick<WorkspaceBook, "get">;
      gitlab: Pick<Gitlab, "credential" | "cloneUrl" | "status">;
      api: GitlabMergeRequests;
      work: ShipWork;
      now?: () => number;
    },
  ) {
    this.#log = log;
    this.#copy = new RowCopy({
      readAll: () => log.all(),
      key: (row) => row.sessionId,
      moved: (was, now) => summaryKey(was) !== summaryKey(now),
      changed: (ids) => this.#changed(ids),
      what: "merge request records",
    });
  }

  /**
   * Read every record, then every `everyMs` again, telling `changed` whose summary moved (another replica's
   * write, or a deletion). @throws what the database throws on the first read.
   */
  async start(changed: (sessionIds: string[]) => void, everyMs = COPY_POLL_MS): Promise<void> {
    this.#changed = changed;
    await this.#copy.start(everyMs);
  }

  /** Read every record again into the copy (tests call it to skip the wait). */
  async reread(): Promise<void> {
    if (!this.#closed) await this.#copy.refresh();
  }

  /** What the session list shows of a session's merge request (this replica's copy), or undefined. */
  summary(sessionId: string): SessionMergeRequest | undefined {
    const view = this.#viewOf(this.#copy.get(sessionId));
    return view && summaryOf(view);
  }

  /**
   * Hear of every change this replica writes, once committed; with `inTransaction`, inside the save's
   * transaction, handed the store's handle of it (a PostgreSQL transaction here): what the listener writes
   * through that handle commits with the marks, or neither does. A listener that throws undoes the save.
   * @returns the removal
   */
  onChange(listener: Listener, options: { inTransaction?: boolean } = {}): () => void {
    const set = options.inTransaction ? this.#inTransaction : this.#listeners;
    set.add(listener);
    return () => set.delete(listener);
  }

  /**
   * Start the background poller: every `everyMs`, while `leads()` (this replica holds the leader's lock), up
   * to `POLL_BATCH` open merge requests whose record is older than `REFRESH_MS` are read again from GitLab.
   */
  follow(everyMs = POLL_MS, leads: () => boolean = () => true): void {
    if (this.#poller !== undefined || this.#closed) return;
    this.#poller = setInterval(() => {
      if (this.#polling || !leads()) return;
      this.#polling = this.poll().then(() => {}, (error) => {
        console.error(`lvmh: following merge requests: ${(error as Error).message}`);
      }).finally(() => this.#polling = null);
    }, everyMs);
  }

  /** One round of the poller. @returns the sessions whose record was read again */
  async poll(): Promise<string[]> {
    if (this.#closed || !this.deps.gitlab.credential()) return [];
    const due = await this.#log.due(this.#now() - REFRESH_MS, POLL_BATCH);
    for (const id of due) {
      if (this.#closed) break;
      await this.refresh(id).catch(async () => {
        // GitLab unreachable, the token gone or the project moved: tried again after the others.
        if (!this.#closed) await this.#log.postpone(id, this.#now());
      });
    }
    return due;
  }

  /**
   * Stop the poller and the copy's reads, cut the reads of GitLab in flight, and wait for the work in flight
   * (shutdown). A ship in flight is not cut: its writes to GitLab finish or time out.
   */
  async close(): Promise<void> {
    this.#closed = true;
    this.#closing.abort(new Error("the daemon is stopping"));
    clearInterval(this.#poller);
    this.#copy.close();
    this.#poller = undefined;
    await this.#polling;
    await Promise.allSettled([...this.#refreshing.values(), ...this.#pending]);
  }

  /** Read the merge request again from GitLab now. @throws {UpstreamError} when GitLab cannot be read. */
  refresh(sessionId: string): Promise<void> {
    const running = this.#refreshing.get(sessionId);
    if (running) return running;
    const run = (async () => {
      const row = await this.#log.row(sessionId);
      if (!row || row.iid === null || !this.deps.gitlab.credential()) return;
      const mr = await this.deps.api.get(row.repo, row.iid, this.#closing.signal);
      if (!this.#closed) await this.#write(sessionId, () => fieldsOf(mr));
    })().finally(() => this.#refreshing.delete(sessionId));
    this.#refreshing.set(sessionId, run);
    return run;
  }

  /**
   * An inbound GitLab event about `repo` (see `MergeRequests.gitlabEvent`): a pipeline's status is written on
   * the shared records of its branch before this resolves (so before the hook's answer); a merge request or
   * note event reads those merge requests again afterwards.
   * @returns the sessions whose merge request it concerns (none: not lvmh's)
   * @throws {ConflictError} when a pipeline's save kept losing; what the database or a listener throws.
   */
  async gitlabEvent(
    event:
      | {
        kind: "pipeline";
        repo: string;
        branch: string;
        id: number;
        status: string;
        url: string | null;
        failedJobs: string[];
      }
      | { kind: "merge_request" | "note"; repo: string; branch: string | null; iid: number | null },
  ): Promise<string[]> {
    if (this.#closed || event.branch === null) return [];
    // A pipeline concerns every merge request of its branch; another event the one it names, if it names one.
    const wanted = event.kind === "pipeline" ? null : event.iid;
    const ids: string[] = [];
    for (const id of await this.#log.byBranch(event.repo, event.branch)) {
      if (wanted === null || (await this.#log.row(id))?.iid === wanted) ids.push(id);
    }
    for (const id of ids) {
      if (event.kind === "pipeline") {
        await this.#write(id, (row) => {
          if (row.iid === null) return null;
          const current = row.pipeline ? (JSON.parse(row.pipeline) as { id: number }).id : -1;
          // An older pipeline's late event never replaces the newer one's status.
          if (event.id < current) return null;
          return {
            ...fromRow(row),
            pipeline: { id: event.id, status: event.status, webUrl: event.url ?? "" },
          };
        }, { failedJobs: event.failedJobs });
        continue;
      }
      const p = this.refresh(id).catch((error) => {
        console.error(`lvmh: merge request of session ${id}: ${(error as Error).message}`);
      }).finally(() => this.#pending.delete(p));
      this.#pending.add(p);
    }
    return ids;
  }

  /**
   * The merge request's review comments (see `MergeRequests.comments`).
   * @throws {NotFoundError} when the session has no merge request; {NotConnectedError}; {UpstreamError}.
   */
  async comments(sessionId: string): Promise<MergeRequestComment[]> {
    const row = await this.#log.row(sessionId);
    if (!row || row.iid === null) throw new NotFoundError(`Session "${sessionId}" has no merge request`);
    if (!this.deps.gitlab.credential()) throw new NotConnectedError();
    return await reviewComments(this.deps.api, this.deps.gitlab.status().username ?? null, row.repo, row.iid);
  }

  /** The merge request as this replica's copy has it (at most `COPY_POLL_MS` behind another's write). */
  get(sessionId: string): MergeRequestView | undefined {
    return this.#viewOf(this.#copy.get(sessionId));
  }

  /** The shared record, read again from GitLab first when it is open and older than `REFRESH_MS`. */
  async view(sessionId: string): Promise<MergeRequestView | undefined> {
    const row = await this.#log.row(sessionId);
    if (!row || row.iid === null) return undefined;
    if (
      row.state === "opened" && this.#now() - row.refreshedAt >= REFRESH_MS && this.deps.gitlab.credential()
    ) {
      try {
        const mr = await this.deps.api.get(row.repo, row.iid, this.#closing.signal);
        await this.#write(sessionId, () => fieldsOf(mr));
      } catch {
        // GitLab unreachable or the token gone: the last known state is still the best answer.
      }
    }
    return this.#viewOf(await this.#log.row(sessionId));
  }

  /** Forget a deleted session's record on the shared database (the others' copies at their next read). */
  async sessionDeleted(sessionId: string): Promise<void> {
    await this.#copy.write(() => {
      this.#copy.put(sessionId, null);
      return this.#log.delete(sessionId);
    });
  }

  /**
   * Push the session's work and open (or update) its merge request (see `MergeRequests.ship`).
   * @throws what `MergeRequests.ship` throws; {ConflictError} also when another replica pushed meanwhile.
   */
  ship(
    sessionId: string,
    req: ShipRequest,
  ): Promise<{ created: boolean; mergeRequest: MergeRequestSummary }> {
    return this.#shipping(sessionId, () => shipSession(this.deps, this.#shipRecord, sessionId, req));
  }

  #now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  #viewOf(row: Row | null | undefined): MergeRequestView | undefined {
    return row ? toView(row) ?? undefined : undefined;
  }

  /** Record a push over `lease`; the same sha already recorded (another replica pushed it too) is no conflict. */
  async #pushed(
    sessionId: string,
    push: { repo: string; sourceBranch: string; sha: string },
    lease: string | null,
  ): Promise<void> {
    await this.#copy.write(async () => {
      const moved = await this.#log.updateIf(sessionId, lease, push, this.#now());
      const row = await this.#log.row(sessionId);
      if (!moved && row?.pushedSha !== push.sha) {
        throw new ConflictError(
          `Session "${sessionId}" was pushed through another replica meanwhile: ship it again`,
        );
      }
      if (row) this.#copy.put(sessionId, row);
    });
  }

  /**
   * Write what GitLab says (`fieldsFor` the current row; null: nothing to write) over the row it was computed
   * from, with the in-transaction listeners in the same transaction; tell the others once committed. A save
   * that lost to another replica's is computed again from the row that won.
   * @throws {ConflictError} when it lost `SAVE_ATTEMPTS` times running.
   */
  async #write(
    sessionId: string,
    fieldsFor: (row: Row) => Fields | null,
    extra: { failedJobs?: string[] } = {},
  ): Promise<void> {
    for (let attempt = 0; attempt < SAVE_ATTEMPTS; attempt++) {
      const row = await this.#log.row(sessionId);
      const fields = row && fieldsFor(row);
      if (!row || !fields) return;
      const read = readOf(row, fields, this.#now(), extra);
      const change = read.change;
      const saved = await this.#copy.write(async () => {
        const saved = await this.#log.saveIf(
          sessionId,
          row,
          read.save,
          change ? this.#also(change) : undefined,
        );
        if (saved) this.#copy.put(sessionId, read.row);
        return saved;
      });
      if (!saved) continue;
      if (!change) return;
      for (const listener of this.#listeners) {
        try {
          await listener(change);
        } catch (error) {
          console.error(`lvmh: merge request change of ${sessionId}: ${(error as Error).message}`);
        }
      }
      return;
    }
    throw new ConflictError(`The merge request record of session "${sessionId}" kept changing: not saved`);
  }

  /** The in-transaction listeners as the log's `also`: synchronous on SQLite, awaited on PostgreSQL. */
  #also(change: MergeRequestChange): Also | undefined {
    if (!this.#inTransaction.size) return undefined;
    const listeners = [...this.#inTransaction];
    if (this.#log.kind === "sqlite") {
      return ((db: unknown) => {
        for (const listener of listeners) void listener(change, db);
      }) as Also;
    }
    return (async (tx: unknown) => {
      for (const listener of listeners) await listener(change, tx);
    }) as Also;
  }
}

/** What of a row the session list shows, as one string (empty: nothing). */
function summaryKey(row: Row | undefined): string {
  const view = row ? toView(row) : null;
  return view ? JSON.stringify(summaryOf(view)) : "";
}
