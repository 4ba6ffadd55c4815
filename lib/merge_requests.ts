/**
 * Ship a spawned session's work as a GitLab merge request, and keep lvmh's record of it.
 *
 * `ship` runs the steps in order, one at a time per session: inspect the working copy (no token, no network),
 * refuse when nothing changed since the recorded base or when an added line looks like a secret, commit the
 * uncommitted changes as the connected GitLab user, bundle `baseSha..HEAD`, push the bundle from a fresh
 * repository to the session's own branch under a lease on the sha lvmh last pushed there, then create the
 * merge request (adopting the open one GitLab names on its 409) or update its title and description. The
 * record (`session_merge_requests`, one row per session) keeps that last pushed sha, written right after the
 * push, so a failure to create the merge request never loses the lease.
 *
 * Following: an open merge request is read again from GitLab when a person looks (at most every 30 s), by a
 * bounded background poller (`follow`), and at once on the inbound GitLab hook's events (`gitlabEvent`). Each
 * change of the record is told to the `onChange` listeners (the session list's row, notifications) once it is
 * committed; a listener registered `inTransaction` (the failed-pipeline follow-up, a plain row insert) is told
 * inside the same SQLite savepoint as the row itself, so what it keeps and the mark that says it was done
 * commit together. Pipeline announcements and failed-pipeline prompts are
 * recorded per pipeline id, so a restart or a replayed event never repeats them.
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import type { Gitlab } from "./gitlab.ts";
import type { GitlabMergeRequest, GitlabMergeRequests } from "./gitlab_merge_requests.ts";
import type { Workspaces } from "./workspaces.ts";
import type { MergeRequestComment, MergeRequestView, SessionMergeRequest } from "./protocol.ts";
import { ConflictError, NotFoundError } from "./errors.ts";
import { scanDiff } from "./secret_scan.ts";
import { SecretsFoundError, type ShipRequest, type ShipWork } from "./ship_work.ts";
import { toComment } from "./merge_request_comments.ts";
import { LVMH_BRANCH_RE } from "../docker/push_helper.ts";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS session_merge_requests(sessionId TEXT PRIMARY KEY, repo TEXT NOT NULL,
  sourceBranch TEXT NOT NULL, pushedSha TEXT, iid INTEGER, webUrl TEXT, state TEXT, targetBranch TEXT,
  title TEXT, pipeline TEXT, mergeStatus TEXT, notes INTEGER NOT NULL DEFAULT 0, updatedAt INTEGER NOT NULL,
  refreshedAt INTEGER NOT NULL DEFAULT 0);
`;

/** Columns added after the table's first version, with their definitions (added to older files at open). */
const ADDED_COLUMNS: Record<string, string> = {
  // The last pipeline id announced (merge_request.pipeline), and the last one the session was prompted for.
  pipelineNotified: "INTEGER",
  pipelinePrompted: "INTEGER",
  // How many failed-pipeline follow-ups the session had for this merge request (at most `MAX_PIPELINE_PROMPTS`).
  pipelinePrompts: "INTEGER NOT NULL DEFAULT 0",
};

/** An open merge request is read again from GitLab when its record is older than this. */
export const REFRESH_MS = 30_000;
/** How often the background poller looks for open merge requests due for a refresh. */
export const POLL_MS = 10_000;
/** At most this many merge requests are read from GitLab per poll (one after the other). */
export const POLL_BATCH = 5;
/** A session is prompted about at most this many failed pipelines per merge request. */
export const MAX_PIPELINE_PROMPTS = 3;
/** Pipeline statuses that end a pipeline and are announced. */
const FINISHED = new Set(["failed", "success"]);
/** GitLab's prefix for a draft merge request. */
const DRAFT = "Draft: ";

/** What `GET /api/sessions/:id/merge-request` answers. */
export type { MergeRequestView };

/** What `POST /api/sessions/:id/merge-request` answers in `mergeRequest`. */
export type MergeRequestSummary = Pick<
  MergeRequestView,
  "iid" | "webUrl" | "state" | "sourceBranch" | "targetBranch" | "sha"
>;

/** A change of a session's merge request record, as `onChange` listeners hear of it. */
export interface MergeRequestChange {
  sessionId: string;
  repo: string;
  previous: MergeRequestView | undefined;
  view: MergeRequestView;
  /** A pipeline that failed or succeeded and was not announced before (once per pipeline id). */
  pipelineFinished: boolean;
  /** It was open and is now merged. */
  merged: boolean;
  /**
   * A failed pipeline the session is to be told of: not prompted for before, and within
   * `MAX_PIPELINE_PROMPTS` for this merge request (counted as this change is written).
   */
  promptFailure: boolean;
  /** The failed jobs, when the hook's event named them. */
  failedJobs?: string[];
}

interface Row {
  sessionId: string;
  pipelineNotified: number | null;
  pipelinePrompted: number | null;
  pipelinePrompts: number;
  repo: string;
  sourceBranch: string;
  pushedSha: string | null;
  iid: number | null;
  webUrl: string | null;
  state: string | null;
  targetBranch: string | null;
  title: string | null;
  pipeline: string | null;
  mergeStatus: string | null;
  notes: number;
  updatedAt: number;
  refreshedAt: number;
}

/** The merge requests of sessions (`app.mergeRequests`): the records, `ship` and the followed view. */
export class MergeRequests {
  #get: StatementSync;
  #upsertPush: StatementSync;
  #saveMr: StatementSync;
  #delete: StatementSync;
  #marks: StatementSync;
  #due: StatementSync;
  #byBranch: StatementSync;
  #postpone: StatementSync;
  #db: DatabaseSync;
  /** One ship at a time per session: a second call waits for the first (it then updates what that made). */
  #running = new Map<string, Promise<unknown>>();
  /** What the session list shows, per session with a merge request (read for every row of every list). */
  #summaries = new Map<string, SessionMergeRequest>();
  #listeners = new Set<(change: MergeRequestChange) => void>();
  #inTransaction = new Set<(change: MergeRequestChange) => void>();
  /** Refreshes from GitLab in flight, per session: a second ask joins the first. */
  #refreshing = new Map<string, Promise<void>>();
  #poller: ReturnType<typeof setInterval> | undefined;
  #polling: Promise<void> | null = null;
  #closed = false;

  constructor(
    db: DatabaseSync,
    private deps: {
      workspaces: Pick<Workspaces, "get">;
      gitlab: Pick<Gitlab, "credential" | "cloneUrl" | "status">;
      api: GitlabMergeRequests;
      work: ShipWork;
      now?: () => number;
    },
  ) {
    this.#db = db;
    db.exec(SCHEMA);
    const have = new Set(
      (db.prepare("PRAGMA table_info(session_merge_requests)").all() as { name: string }[]).map((c) =>
        c.name
      ),
    );
    for (const [name, type] of Object.entries(ADDED_COLUMNS)) {
      if (!have.has(name)) db.exec(`ALTER TABLE session_merge_requests ADD COLUMN ${name} ${type}`);
    }
    this.#get = db.prepare("SELECT * FROM session_merge_requests WHERE sessionId = ?");
    this.#upsertPush = db.prepare(
      `INSERT INTO session_merge_requests(sessionId, repo, sourceBranch, pushedSha, updatedAt) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT(sessionId) DO UPDATE SET pushedSha = excluded.pushedSha, updatedAt = excluded.updatedAt`,
    );
    this.#saveMr = db.prepare(
      `UPDATE session_merge_requests SET iid = ?, webUrl = ?, state = ?, targetBranch = ?, title = ?, pipeline = ?,
       mergeStatus = ?, notes = ?, updatedAt = ?, refreshedAt = ? WHERE sessionId = ?`,
    );
    this.#delete = db.prepare("DELETE FROM session_merge_requests WHERE sessionId = ?");
    this.#marks = db.prepare(
      `UPDATE session_merge_requests SET pipelineNotified = ?, pipelinePrompted = ?, pipelinePrompts = ?
       WHERE sessionId = ?`,
    );
    this.#due = db.prepare(
      `SELECT sessionId FROM session_merge_requests WHERE iid IS NOT NULL AND state = 'opened' AND refreshedAt <= ?
       ORDER BY refreshedAt LIMIT ?`,
    );
    this.#postpone = db.prepare("UPDATE session_merge_requests SET refreshedAt = ? WHERE sessionId = ?");
    this.#byBranch = db.prepare(
      "SELECT sessionId FROM session_merge_requests WHERE repo = ? AND sourceBranch = ? AND iid IS NOT NULL",
    );
    for (const row of db.prepare("SELECT * FROM session_merge_requests").all() as unknown as Row[]) {
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
   * polled. Stopped by `close`.
   */
  follow(everyMs = POLL_MS): void {
    if (this.#poller !== undefined || this.#closed) return;
    this.#poller = setInterval(() => {
      if (this.#polling) return;
      this.#polling = this.poll().then(() => {}, (error) => {
        console.error(`lvmh: following merge requests: ${(error as Error).message}`);
      }).finally(() => this.#polling = null);
    }, everyMs);
  }

  /** One round of the poller (tests call it directly). @returns the sessions whose record was read again */
  async poll(): Promise<string[]> {
    if (this.#closed || !this.deps.gitlab.credential()) return [];
    const due = (this.#due.all(this.#now() - REFRESH_MS, POLL_BATCH) as { sessionId: string }[])
      .map((r) => r.sessionId);
    for (const id of due) {
      if (this.#closed) break;
      await this.refresh(id).catch(() => {
        // GitLab unreachable, the token gone or the project moved: tried again after the others, so a few
        // broken ones never starve the rest.
        if (!this.#closed) this.#postpone.run(this.#now(), id);
      });
    }
    return due;
  }

  /** Stop the poller and wait for a round in flight (shutdown); nothing is written afterwards. */
  async close(): Promise<void> {
    this.#closed = true;
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
      const mr = await this.deps.api.get(row.repo, row.iid);
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
    const ids = (this.#byBranch.all(event.repo, event.branch) as { sessionId: string }[])
      .map((r) => r.sessionId)
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
    const me = this.deps.gitlab.status().username ?? null;
    const notes = (await this.deps.api.notes(row.repo, row.iid)).filter((n) =>
      !n.system && (me === null || n.author !== me)
    );
    let diffs: Awaited<ReturnType<GitlabMergeRequests["diffs"]>> = [];
    if (notes.some((n) => n.position)) {
      // Best effort: without the diff the comments still go, with their path and line.
      diffs = await this.deps.api.diffs(row.repo, row.iid).catch(() => []);
    }
    return notes.map((n) => toComment(n, diffs));
  }

  #now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  #row(sessionId: string): Row | undefined {
    return this.#get.get(sessionId) as Row | undefined;
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
        this.#save(sessionId, await this.deps.api.get(row.repo, row.iid));
      } catch {
        // GitLab unreachable or the token gone: the last known state is still the best answer.
      }
    }
    return this.get(sessionId);
  }

  /** Forget a deleted session's record (the merge request on GitLab stays). */
  sessionDeleted(sessionId: string): void {
    this.#delete.run(sessionId);
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
    const previous = this.#running.get(sessionId) ?? Promise.resolve();
    const run = previous.catch(() => {}).then(() => this.#ship(sessionId, req));
    this.#running.set(sessionId, run);
    run.finally(() => {
      if (this.#running.get(sessionId) === run) this.#running.delete(sessionId);
    }).catch(() => {});
    return run;
  }

  async #ship(
    sessionId: string,
    req: ShipRequest,
  ): Promise<{ created: boolean; mergeRequest: MergeRequestSummary }> {
    const { workspaces, gitlab, api, work } = this.deps;
    const ws = workspaces.get(sessionId);
    if (!ws) {
      throw new ConflictError(
        `Session "${sessionId}" is not a spawned session: it has no working copy to push`,
      );
    }
    if (!LVMH_BRANCH_RE.test(ws.branch)) {
      throw new ConflictError(`"${ws.branch}" is not a branch lvmh created`);
    }
    const token = gitlab.credential();
    if (!token) throw new NotConnectedError();

    const state = await work.inspect(sessionId, ws.baseSha);
    if (!state.containsBase) {
      throw new ConflictError(
        `The session's HEAD no longer contains its base commit ${ws.baseSha.slice(0, 12)}`,
      );
    }
    const row = this.#row(sessionId);
    if (state.head === ws.baseSha && !state.dirty) {
      throw new ConflictError(
        `Nothing to push: no change since ${ws.baseBranch} at ${ws.baseSha.slice(0, 12)}`,
      );
    }
    const found = scanDiff(state.patch);
    if (found.length > 0 && !req.allowSecrets) throw new SecretsFoundError(found, false);
    if (state.dirty) {
      const user = await api.user();
      const commit = await work.commit(sessionId, {
        message: req.title,
        authorName: user.name,
        authorEmail: user.email,
      });
      // The agent may have written more between the inspection and the commit: scan what was committed too.
      const late = scanDiff(commit.patch);
      if (late.length > 0 && !req.allowSecrets) throw new SecretsFoundError(late, true);
    }
    const { head, bundle } = await work.bundle(sessionId, ws.baseSha);
    if (row?.pushedSha !== head) {
      const push = (lease: string | null) =>
        work.push({
          repo: ws.repo,
          url: gitlab.cloneUrl(ws.repo),
          branch: ws.branch,
          baseSha: ws.baseSha,
          baseBranch: ws.baseBranch,
          head,
          lease,
          bundle,
          token,
        });
      const lease = row?.pushedSha ?? null;
      try {
        await push(lease);
      } catch (error) {
        // GitLab deletes a merged branch when asked to: the lease on what lvmh pushed is then stale. Pushing
        // again with an empty lease ("must not exist") can only create the branch, never overwrite one.
        if (lease === null || !/stale info/.test((error as Error).message)) throw error;
        await push(null);
      }
      this.#upsertPush.run(sessionId, ws.repo, ws.branch, head, this.#now());
    }

    const title = req.draft ? `${DRAFT}${req.title.replace(/^draft:\s*/i, "")}` : req.title;
    let mr: GitlabMergeRequest;
    let created = false;
    // A merged or closed merge request is history: new work opens a new one.
    if (row?.iid != null && row.state === "opened") {
      mr = await api.update(ws.repo, row.iid, {
        title,
        ...(req.description === undefined ? {} : { description: req.description }),
      });
    } else {
      const made = await api.create(ws.repo, {
        sourceBranch: ws.branch,
        targetBranch: req.targetBranch ?? ws.baseBranch,
        title,
        ...(req.description === undefined ? {} : { description: req.description }),
      });
      mr = made.adopted
        ? await api.update(ws.repo, made.mergeRequest.iid, {
          title,
          ...(req.description === undefined ? {} : { description: req.description }),
        })
        : made.mergeRequest;
      created = true;
    }
    this.#save(sessionId, mr);
    const view = this.get(sessionId)!;
    return {
      created,
      mergeRequest: {
        iid: view.iid,
        webUrl: view.webUrl,
        state: view.state,
        sourceBranch: view.sourceBranch,
        targetBranch: view.targetBranch,
        sha: view.sha,
      },
    };
  }

  #save(sessionId: string, mr: GitlabMergeRequest): void {
    const row = this.#row(sessionId);
    if (!row) return;
    this.#write(sessionId, {
      iid: mr.iid,
      webUrl: mr.webUrl,
      state: mr.state,
      targetBranch: mr.targetBranch,
      title: mr.title,
      pipeline: mr.pipeline,
      mergeStatus: mr.mergeStatus,
      notes: mr.notes,
    });
  }

  /**
   * Write what GitLab says of the record's merge request, and tell the listeners what changed, in one
   * savepoint: a listener's own writes (a kept follow-up) commit with the marks that say it was done.
   */
  #write(sessionId: string, mr: Fields, extra: { failedJobs?: string[] } = {}): void {
    const row = this.#row(sessionId);
    if (!row) return;
    const previous = toView(row) ?? undefined;
    const now = this.#now();
    const sameMr = row.iid === mr.iid;
    let notified = sameMr ? row.pipelineNotified : null;
    let prompted = sameMr ? row.pipelinePrompted : null;
    let prompts = sameMr ? row.pipelinePrompts : 0;
    const p = mr.pipeline;
    const pipelineFinished = p !== null && FINISHED.has(p.status) && notified !== p.id;
    if (pipelineFinished) notified = p.id;
    const promptFailure = p !== null && p.status === "failed" && mr.state === "opened" && prompted !== p.id &&
      prompts < MAX_PIPELINE_PROMPTS;
    if (promptFailure) {
      prompted = p.id;
      prompts++;
    }
    const merged = mr.state === "merged" && previous?.state !== "merged" && previous !== undefined;
    const changed = !previous || previous.iid !== mr.iid || previous.state !== mr.state ||
      previous.title !== mr.title || previous.mergeStatus !== mr.mergeStatus || previous.notes !== mr.notes ||
      previous.webUrl !== mr.webUrl || previous.targetBranch !== mr.targetBranch ||
      JSON.stringify(previous.pipeline) !== JSON.stringify(mr.pipeline);
    let change: MergeRequestChange | null = null;
    this.#db.exec("SAVEPOINT merge_request");
    try {
      this.#saveMr.run(
        mr.iid,
        mr.webUrl,
        mr.state,
        mr.targetBranch,
        mr.title,
        mr.pipeline ? JSON.stringify(mr.pipeline) : null,
        mr.mergeStatus,
        mr.notes,
        changed ? now : row.updatedAt,
        now,
        sessionId,
      );
      this.#marks.run(notified, prompted, prompts, sessionId);
      const view = this.get(sessionId)!;
      if (changed || pipelineFinished || promptFailure) {
        change = {
          sessionId,
          repo: row.repo,
          previous,
          view,
          pipelineFinished,
          merged,
          promptFailure,
          ...(extra.failedJobs?.length ? { failedJobs: extra.failedJobs } : {}),
        };
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

/** What GitLab says of a merge request, as the record keeps it. */
type Fields = Pick<
  MergeRequestView,
  "iid" | "webUrl" | "state" | "targetBranch" | "title" | "pipeline" | "mergeStatus" | "notes"
>;

function fromRow(row: Row): Fields {
  const view = toView(row)!;
  return {
    iid: view.iid,
    webUrl: view.webUrl,
    state: view.state,
    targetBranch: view.targetBranch,
    title: view.title,
    pipeline: view.pipeline,
    mergeStatus: view.mergeStatus,
    notes: view.notes,
  };
}

function summaryOf(view: MergeRequestView): SessionMergeRequest {
  return { iid: view.iid, state: view.state, pipeline: view.pipeline?.status ?? null };
}

/** GitLab is not connected. → 412 */
export class NotConnectedError extends Error {
  override name = "NotConnectedError";
  constructor() {
    super("GitLab is not connected: connect it with a token that has the api and write_repository scopes");
  }
}

function toView(row: Row): MergeRequestView | null {
  if (row.iid === null) return null;
  return {
    iid: row.iid,
    webUrl: row.webUrl ?? "",
    state: row.state === "merged" || row.state === "closed" ? row.state : "opened",
    sourceBranch: row.sourceBranch,
    targetBranch: row.targetBranch ?? "",
    sha: row.pushedSha ?? "",
    title: row.title ?? "",
    pipeline: row.pipeline ? JSON.parse(row.pipeline) : null,
    mergeStatus: row.mergeStatus,
    notes: row.notes,
    updatedAt: row.updatedAt,
  };
}
