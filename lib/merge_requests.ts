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
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import type { Config } from "./config.ts";
import type { Gitlab, GitlabMergeRequest, GitlabMergeRequests } from "./gitlab.ts";
import type { Workspaces } from "./workspaces.ts";
import type { MergeRequestView } from "./protocol.ts";
import { workVolumeName } from "./workspaces.ts";
import { ConflictError, isDomainError, UnavailableError, UpstreamError } from "./errors.ts";
import { describeFindings, scanDiff, type SecretFinding } from "./secret_scan.ts";
import { createEngine, type Engine } from "../docker/engine.ts";
import { DockerUnreachableError } from "../docker/errors.ts";
import { bundleWork, commitWork, inspectWork, type WorkState } from "../docker/export_helper.ts";
import { LVMH_BRANCH_RE, pushBundle } from "../docker/push_helper.ts";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS session_merge_requests(sessionId TEXT PRIMARY KEY, repo TEXT NOT NULL,
  sourceBranch TEXT NOT NULL, pushedSha TEXT, iid INTEGER, webUrl TEXT, state TEXT, targetBranch TEXT,
  title TEXT, pipeline TEXT, mergeStatus TEXT, notes INTEGER NOT NULL DEFAULT 0, updatedAt INTEGER NOT NULL,
  refreshedAt INTEGER NOT NULL DEFAULT 0);
`;

/** An open merge request is read again from GitLab when its record is older than this. */
export const REFRESH_MS = 30_000;
/** GitLab's prefix for a draft merge request. */
const DRAFT = "Draft: ";

/** What `GET /api/sessions/:id/merge-request` answers. */
export type { MergeRequestView };

/** What `POST /api/sessions/:id/merge-request` answers in `mergeRequest`. */
export type MergeRequestSummary = Pick<
  MergeRequestView,
  "iid" | "webUrl" | "state" | "sourceBranch" | "targetBranch" | "sha"
>;

/** The request of `ship`. */
export interface ShipRequest {
  title: string;
  description?: string;
  targetBranch?: string;
  draft?: boolean;
  /** Push even when an added line looks like a secret (admins only; the route checks the role). */
  allowSecrets?: boolean;
}

/** An added line looks like a secret: nothing was pushed. → 422 with `findings`. */
export class SecretsFoundError extends Error {
  override name = "SecretsFoundError";
  constructor(readonly findings: SecretFinding[], committed: boolean) {
    super(
      `Refusing to push: added lines look like secrets: ${describeFindings(findings)}` +
        (committed ? " (committed in the working copy, not pushed)" : "") +
        "; remove them from the session's commits, or an admin may pass allowSecrets",
    );
  }
}

/** The git steps on a session's working copy and the push; Docker helpers in the daemon, fakes in unit tests. */
export interface ShipWork {
  inspect(sessionId: string, baseSha: string): Promise<WorkState>;
  commit(
    sessionId: string,
    o: { message: string; authorName: string; authorEmail: string },
  ): Promise<{ head: string; committed: boolean; patch: string }>;
  bundle(sessionId: string, baseSha: string): Promise<{ head: string; bundle: Uint8Array }>;
  push(o: {
    repo: string;
    url: string;
    branch: string;
    baseSha: string;
    baseBranch: string;
    head: string;
    lease: string | null;
    bundle: Uint8Array;
    token: string;
  }): Promise<void>;
}

/** The helpers on the daemon's Docker engine; engine and git failures become the kinds of `lib/errors.ts`. */
export function dockerShipWork(
  config: Pick<Config, "dockerSock" | "workerImage" | "workerNetwork">,
  options: { engine?: Engine } = {},
): ShipWork {
  const engine = options.engine ?? createEngine({ socketPath: config.dockerSock });
  const base = (sessionId: string) => ({
    image: config.workerImage,
    volume: workVolumeName(sessionId),
    labels: { "lvmh.managed": "true", "lvmh.session": sessionId },
  });
  return {
    inspect: (sessionId, baseSha) => domain(inspectWork(engine, { ...base(sessionId), baseSha })),
    commit: (sessionId, o) => domain(commitWork(engine, { ...base(sessionId), ...o })),
    bundle: (sessionId, baseSha) => domain(bundleWork(engine, { ...base(sessionId), baseSha })),
    push: (o) =>
      domain(pushBundle(engine, {
        image: config.workerImage,
        url: o.url,
        branch: o.branch,
        baseSha: o.baseSha,
        baseBranch: o.baseBranch,
        head: o.head,
        lease: o.lease,
        bundle: o.bundle,
        token: o.token,
        network: config.workerNetwork,
        labels: { "lvmh.managed": "true", "lvmh.repo": o.repo },
      })),
  };
}

async function domain<T>(call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (error) {
    if (error instanceof DockerUnreachableError) {
      throw new UnavailableError(`Docker is unreachable: ${error.message}`);
    }
    if (isDomainError(error)) throw error;
    throw new UpstreamError(error instanceof Error ? error.message : String(error));
  }
}

interface Row {
  sessionId: string;
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
  /** One ship at a time per session: a second call waits for the first (it then updates what that made). */
  #running = new Map<string, Promise<unknown>>();

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
    db.exec(SCHEMA);
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
    const now = this.#now();
    this.#saveMr.run(
      mr.iid,
      mr.webUrl,
      mr.state,
      mr.targetBranch,
      mr.title,
      mr.pipeline ? JSON.stringify(mr.pipeline) : null,
      mr.mergeStatus,
      mr.notes,
      now,
      now,
      sessionId,
    );
  }
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
