/**
 * The steps of shipping a spawned session's work as a GitLab merge request, in order: inspect the working
 * copy (no token, no network), refuse when nothing changed since the recorded base or when an added line
 * looks like a secret, commit the uncommitted changes as the connected GitLab user, bundle `baseSha..HEAD`,
 * push the bundle to the session's own branch under a lease on the sha lvmh last pushed there, then create
 * the merge request (adopting the open one GitLab names on its 409) or update its title and description.
 * The pushed sha is recorded right after the push, so a failure to create the merge request never loses the
 * lease. `MergeRequests.ship` runs these one at a time per session; this module is only the steps.
 */
import type { Gitlab } from "./gitlab.ts";
import type { GitlabMergeRequest, GitlabMergeRequests } from "./gitlab_merge_requests.ts";
import type { WorkspaceBook } from "./workspaces.ts";
import type { MergeRequestView } from "./protocol.ts";
import { ConflictError } from "./errors.ts";
import { scanDiff } from "./secret_scan.ts";
import { SecretsFoundError, type ShipRequest, type ShipWork } from "./ship_work.ts";
import { NotConnectedError } from "./merge_request_errors.ts";
import type { Row } from "./merge_request_record.ts";
import { LVMH_BRANCH_RE } from "../docker/push_helper.ts";

/** GitLab's prefix for a draft merge request. */
const DRAFT = "Draft: ";

/** What `POST /api/sessions/:id/merge-request` answers in `mergeRequest`. */
export type MergeRequestSummary = Pick<
  MergeRequestView,
  "iid" | "webUrl" | "state" | "sourceBranch" | "targetBranch" | "sha"
>;

/** The parts of the daemon the steps use. */
export interface ShipDeps {
  workspaces: Pick<WorkspaceBook, "get">;
  gitlab: Pick<Gitlab, "credential" | "cloneUrl">;
  api: GitlabMergeRequests;
  work: ShipWork;
}

/**
 * The session's record, as the steps read and write it (`MergeRequests` keeps it in the daemon's file and
 * answers at once; `SharedMergeRequests` on the replicas' database, with promises: the steps await both).
 */
export interface ShipRecord {
  row(sessionId: string): Row | undefined | Promise<Row | undefined>;
  /**
   * lvmh pushed `sha` to the session's branch (the lease of the next push) over `lease`, the record's pushed
   * sha the push was based on. @throws {ConflictError} when the record no longer has `lease` (replicas only).
   */
  pushed(
    sessionId: string,
    repo: string,
    branch: string,
    sha: string,
    lease: string | null,
  ): void | Promise<void>;
  /** Write what GitLab answered (the listeners hear of it). */
  save(sessionId: string, mr: GitlabMergeRequest): void | Promise<void>;
  get(sessionId: string): MergeRequestView | undefined | Promise<MergeRequestView | undefined>;
}

/**
 * Push the session's work and open (or update) its merge request.
 * @returns `created` when this call made the record's merge request (the route's 201).
 * @throws {ConflictError} not a spawned session, nothing to push, or a rewritten base; {SecretsFoundError};
 * {NotConnectedError}; {UpstreamError} with git's or GitLab's message; {UnavailableError} when Docker cannot
 * be reached.
 */
export async function shipSession(
  deps: ShipDeps,
  record: ShipRecord,
  sessionId: string,
  req: ShipRequest,
): Promise<{ created: boolean; mergeRequest: MergeRequestSummary }> {
  const { workspaces, gitlab, api, work } = deps;
  const ws = await workspaces.get(sessionId);
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
  const row = await record.row(sessionId);
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
    await record.pushed(sessionId, ws.repo, ws.branch, head, row?.pushedSha ?? null);
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
  await record.save(sessionId, mr);
  const view = (await record.get(sessionId))!;
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
