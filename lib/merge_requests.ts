/**
 * Ship a spawned session's work as a GitLab merge request, and keep lvmh's record of it.
 *
 * `ship` runs the steps of `lib/merge_request_ship.ts` one at a time per session (a second call waits for the
 * first, then updates what that made). The record (`lib/merge_request_record.ts`, one row per session) keeps
 * the last pushed sha, the merge request as GitLab last said, and the pipeline marks.
 *
 * Following: an open merge request is read again from GitLab when a person looks (at most every 30 s), by a
 * bounded background poller (`follow`), and at once on the inbound GitLab hook's events (`gitlabEvent`). Each
 * change of the record is told to the `onChange` listeners (the session list's row, notifications) once it is
 * committed; a listener registered `inTransaction` (the failed-pipeline follow-up, a plain row insert) is told
 * inside the same SQLite savepoint as the row itself, so what it keeps and the mark that says it was done
 * commit together. Pipeline announcements and failed-pipeline prompts are
 * recorded per pipeline id (`lib/merge_request_change.ts`), so a restart or a replayed event never repeats them.
 */
import type { DatabaseSync } from "node:sqlite";
import type { Gitlab } from "./gitlab.ts";
import type { GitlabMergeRequest, GitlabMergeRequests } from "./gitlab_merge_requests.ts";
import type { WorkspaceBook } from "./workspaces.ts";
import type { MergeRequestComment, MergeRequestView, SessionMergeRequest } from "./protocol.ts";
import { NotFoundError } from "./errors.ts";
import type { ShipRequest, ShipWork } from "./ship_work.ts";
import { reviewComments } from "./merge_request_review.ts";
import { NotConnectedError } from "./merge_request_errors.ts";
import {
  type Fields,
  fieldsOf,
  fromRow,
  MergeRequestTable,
  type Row,
  summaryOf,
  toView,
} from "./merge_request_record.ts";
import type { MergeRequestChange } from "./merge_request_change.ts";
import { readOf } from "./merge_request_read.ts";
import { type MergeRequestSummary, type ShipRecord, shipSession } from "./merge_request_ship.ts";
import { createKeyedLock } from "./spawn/lock.ts";

/** An open merge request is read again from GitLab when its record is older than this. */
export const REFRESH_MS = 30_000;
/** How often the background poller looks for open merge requests due for a refresh. */
export const POLL_MS = 10_000;
/** At most this many merge requests are read from GitLab per poll (one after the other). */
export const POLL_BATCH = 5;

/** What `GET /api/sessions/:id/merge-request` answers. */
export type { MergeRequestView };

/** The merge requests of sessions (`app.mergeRequests`): the records, `ship` and the followed view. */
export class MergeRequests {
  #table: MergeRequestTable;
  #db: DatabaseSync;
  /** One ship at a time per session: a second call waits for the first (it then updates what that made). */
  #shipping = createKeyedLock();
  /** The record as the ship steps read and write it. */
  #shipRecord: ShipRecord = {
    row: (id) => this.#row(id),
    pushed: (id, repo, branch, sha) => this.#table.pushed(id, repo, branch, sha, this.#now()),
    save: (id, mr) => this.#save(id, mr),
    get: (id) => this.get(id),
  };
  /** What the session list shows, per session with a merge request (read for every row of every list). */
  #summaries = new Map<string, SessionMergeRequest>();
  #listeners = new Set<(change: MergeRequestChange) => void>();
  #inTransaction = new Set<(change: MergeRequestChange) => void>();
  /** Refreshes from GitLab in flight, per session: a second ask joins the first. */
  #refreshing = new Map<string, Promise<void>>();
  #poller: ReturnType<typeof setInterval> | undefined;
  #polling: Promise<void> | null = null;
  #closed = false;
  /** Aborted by `close`: a read of GitLab in flight ends then, not after its 15 s bound. */
  #closing = new AbortController();

  constructor(
    db: DatabaseSync,
    private deps: {
      workspaces: Pick<WorkspaceBook, "get">;
      gitlab: Pick<Gitlab, "credential" | "cloneUrl" | "status">;
      api: GitlabMergeRequests;
      work: ShipWork;
      now?: () => number;
    },
  ) {
    this.#db = db;
    this.#table = new MergeRequestTable(db);
    for (const row of this.#table.all()) {
      const view = toView(row);
      if (view) this.#summaries.set(row.sessionId, summaryOf(view));
    }
  }

  /** What the session list shows of a session's merge request, or undefined when it has none. */
  summary(sessionId: string): SessionMergeRequest | undefined {
    return this.#summaries.get(sessionId);
  }

  /**
   * Hear of every change of a record (see `MergeRequestChange`), after it is committed; with `inTransaction`,
   * inside its savepoint instead (the listener may only write rows: no transaction of its own, no await).
   * @returns the removal
   */
  onChange(
    listener: (change: MergeRequestChange) => void,
    options: { inTransaction?: boolean } = {},
  ): () => void {
    const set = options.inTransaction ? this.#inTransaction : this.#listeners;
    set.add(listener);
    return () => set.delete(listener);
  }

  /**
   * Start the background poller: every `everyMs`, up to `POLL_BATCH` open merge requests whose record is
   * older than `REFRESH_MS` are read again from GitLab, one after the other. Merged and closed ones are never
   * polled. A round runs only while `leads()` (the single daemon always leads). Stopped by `close`.
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

  /** One round of the poller (tests call it directly). @returns the sessions whose record was read again */
  async poll(): Promise<string[]> {
    if (this.#closed || !this.deps.gitlab.credential()) return [];
    const due = this.#table.due(this.#now() - REFRESH_MS, POLL_BATCH);
    for (const id of due) {
      if (this.#closed) break;
      await this.refresh(id).catch(() => {
        // GitLab unreachable, the token gone or the project moved: tried again after the others, so a few
        // broken ones never starve the rest.
        if (!this.#closed) this.#table.postpone(id, this.#now());
      });
    }
    return due;
  }

  /**
   * Stop the poller, cut the reads of GitLab in flight and wait for them (shutdown); nothing is written
   * afterwards. A ship in flight is not cut: its writes to GitLab finish or time out.
   */
  async close(): Promise<void> {
    this.#closed = true;
    this.#closing.abort(new Error("the daemon is stopping"));
    clearInterval(this.#poller);
    this.#poller = undefined;
    await this.#polling;
    await Promise.allSettled([...this.#refreshing.values()]);
  }

  /**
   * Read the merge request again from GitLab now, whatever its age (a hook's event said it changed).
   * @throws {UpstreamError} when GitLab cannot be read.
   */
  refresh(sessionId: string): Promise<void> {
    const running = this.#refreshing.get(sessionId);
    if (running) return running;
    const run = (async () => {
      const row = this.#row(sessionId);
      if (!row || row.iid === null || !this.deps.gitlab.credential()) return;
      const mr = await this.deps.api.get(row.repo, row.iid, this.#closing.signal);
      if (!this.#closed) this.#save(sessionId, mr);
    })().finally(() => this.#refreshing.delete(sessionId));
    this.#refreshing.set(sessionId, run);
    return run;
  }

  /**
   * An inbound GitLab event about `repo`: a pipeline's status is written at once on the merge requests of its
   * branch; a merge request or note event reads those merge requests again (after the caller's answer).
   * @returns the sessions whose merge request it concerns (none: not lvmh's)
   */
  gitlabEvent(
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
  ): string[] {
    if (this.#closed || event.branch === null) return [];
    const ids = this.#table.byBranch(event.repo, event.branch)
      .filter((id) => event.kind === "pipeline" || event.iid === null || this.#row(id)?.iid === event.iid);
    for (const id of ids) {
      if (event.kind === "pipeline") {
        const row = this.#row(id)!;
        const current = row.pipeline ? (JSON.parse(row.pipeline) as { id: number }).id : -1;
        // An older pipeline's late event never replaces the newer one's status.
        if (event.id < current) continue;
        const pipeline = { id: event.id, status: event.status, webUrl: event.url ?? "" };
        this.#write(id, { ...fromRow(row), pipeline }, { failedJobs: event.failedJobs });
      } else {
        this.refresh(id).catch((error) => {
          console.error(`lvmh: merge request of session ${id}: ${(error as Error).message}`);
        });
      }
    }
    return ids;
  }

  /**
   * The merge request's review comments: people's notes and inline ones (with the diff lines around them),
   * oldest first; GitLab's system notes and the connected user's own notes left out.
   * @throws {NotFoundError} when the session has no merge request; {NotConnectedError}; {UpstreamError}.
   */
  async comments(sessionId: string): Promise<MergeRequestComment[]> {
    const row = this.#row(sessionId);
    if (!row || row.iid === null) throw new NotFoundError(`Session "${sessionId}" has no merge request`);
    if (!this.deps.gitlab.credential()) throw new NotConnectedError();
    return await reviewComments(this.deps.api, this.deps.gitlab.status().username ?? null, row.repo, row.iid);
  }

  #now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  #row(sessionId: string): Row | undefined {
    return this.#table.row(sessionId);
  }

  /** The merge request of a session as last recorded, or undefined when it has none (yet). */
  get(sessionId: string): MergeRequestView | undefined {
    const row = this.#row(sessionId);
    return row ? toView(row) ?? undefined : undefined;
  }

  /** The record, read again from GitLab first when it is open and older than `REFRESH_MS` (best effort). */
  async view(sessionId: string): Promise<MergeRequestView | undefined> {
    const row = this.#row(sessionId);
    if (!row || row.iid === null) return undefined;
    if (
      row.state === "opened" && this.#now() - row.refreshedAt >= REFRESH_MS && this.deps.gitlab.credential()
    ) {
      try {
        this.#save(sessionId, await this.deps.api.get(row.repo, row.iid, this.#closing.signal));
      } catch {
        // GitLab unreachable or the token gone: the last known state is still the best answer.
      }
    }
    return this.get(sessionId);
  }

  /** Forget a deleted session's record (the merge request on GitLab stays). */
  sessionDeleted(sessionId: string): void {
    this.#table.delete(sessionId);
    this.#summaries.delete(sessionId);
  }

  /**
   * Push the session's work and open (or update) its merge request.
   * @returns `created` when this call made the record's merge request (the route's 201).
   * @throws {ConflictError} not a spawned session, nothing to push, or a rewritten base; {SecretsFoundError};
   * {UpstreamError} with git's or GitLab's message; {UnavailableError} when Docker cannot be reached.
   */
  ship(
    sessionId: string,
    req: ShipRequest,
  ): Promise<{ created: boolean; mergeRequest: MergeRequestSummary }> {
    return this.#shipping(sessionId, () => shipSession(this.deps, this.#shipRecord, sessionId, req));
  }

  #save(sessionId: string, mr: GitlabMergeRequest): void {
    if (!this.#row(sessionId)) return;
    this.#write(sessionId, fieldsOf(mr));
  }

  /**
   * Write what GitLab says of the record's merge request, and tell the listeners what changed, in one
   * savepoint: a listener's own writes (a kept follow-up) commit with the marks that say it was done.
   */
  #write(sessionId: string, mr: Fields, extra: { failedJobs?: string[] } = {}): void {
    const row = this.#row(sessionId);
    if (!row) return;
    // The marks and the change are decided as the replicas' owner decides them (lib/merge_request_read.ts).
    const { save, change: decided } = readOf(row, mr, this.#now(), extra);
    let change: MergeRequestChange | null = null;
    this.#db.exec("SAVEPOINT merge_request");
    try {
      this.#table.save(sessionId, mr, save.updatedAt, save.refreshedAt);
      this.#table.marks(sessionId, save.marks.notified, save.marks.prompted, save.marks.prompts);
      const view = this.get(sessionId)!;
      if (decided) {
        change = { ...decided, view };
        // A listener that throws undoes the whole change: it is seen again at the next refresh.
        for (const listener of this.#inTransaction) listener(change);
      }
      this.#db.exec("RELEASE merge_request");
      this.#summaries.set(sessionId, summaryOf(view));
    } catch (error) {
      this.#db.exec("ROLLBACK TO merge_request");
      this.#db.exec("RELEASE merge_request");
      throw error;
    }
    if (!change) return;
    for (const listener of this.#listeners) {
      try {
        listener(change);
      } catch (error) {
        console.error(`lvmh: merge request change of ${sessionId}: ${(error as Error).message}`);
      }
    }
  }
}
