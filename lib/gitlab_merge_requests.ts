/**
 * GitLab's merge request API as lvmh uses it (create, find by source branch, read, update, notes, discussions,
 * diffs), over the connection's stored token and base URL (`lib/gitlab.ts`). GitLab's fields are renamed and
 * reduced to what lvmh shows; failures carry GitLab's own message, never the token.
 */
import type { Gitlab } from "./gitlab.ts";
import { PER_PAGE, TIMEOUT_MS } from "./gitlab.ts";
import { ConflictError, UpstreamError } from "./errors.ts";

/** A merge request as lvmh shows it: GitLab's fields renamed, the head pipeline reduced to what a person reads. */
export interface GitlabMergeRequest {
  iid: number;
  webUrl: string;
  state: "opened" | "merged" | "closed";
  sourceBranch: string;
  targetBranch: string;
  sha: string | null;
  title: string;
  pipeline: { id: number; status: string; webUrl: string } | null;
  /** GitLab's `detailed_merge_status` (`mergeable`, `ci_still_running`, `conflict`, …), null before it is known. */
  mergeStatus: string | null;
  /** How many notes people (not GitLab itself) wrote on it. */
  notes: number;
  updatedAt: string | null;
}

/** The merge request calls of the API v4, on the connection's stored token. */
export interface GitlabMergeRequests {
  /** The connected user's name and commit e-mail (the author of the commits lvmh makes for a session). */
  user(): Promise<{ username: string; name: string; email: string }>;
  /**
   * `POST /projects/:id/merge_requests`; on GitLab's 409 ("Another open merge request already exists for this
   * source branch: !N") the existing one is read and returned with `adopted: true`.
   */
  create(
    repo: string,
    mr: { sourceBranch: string; targetBranch: string; title: string; description?: string },
  ): Promise<{ mergeRequest: GitlabMergeRequest; adopted: boolean }>;
  /** `GET /projects/:id/merge_requests/:iid`; `signal` ends it sooner than its timeout (a stopping daemon). */
  get(repo: string, iid: number, signal?: AbortSignal): Promise<GitlabMergeRequest>;
  /** `PUT /projects/:id/merge_requests/:iid` with the fields given (at least one). */
  update(
    repo: string,
    iid: number,
    fields: { title?: string; description?: string },
  ): Promise<GitlabMergeRequest>;
  /**
   * Every note of the merge request, oldest first, from `GET /projects/:id/merge_requests/:iid/discussions`
   * (all pages, up to `MAX_NOTE_PAGES`): general notes and inline ones (`DiffNote`, with their position).
   */
  notes(repo: string, iid: number): Promise<GitlabNote[]>;
  /** The merge request's file diffs, `GET /projects/:id/merge_requests/:iid/diffs` (up to `MAX_NOTE_PAGES` pages). */
  diffs(repo: string, iid: number): Promise<GitlabDiff[]>;
}

/** One note of a merge request as lvmh reads it. */
export interface GitlabNote {
  id: number;
  author: string;
  body: string;
  createdAt: string;
  /** GitLab's own notes ("added 1 commit", "approved this merge request"). */
  system: boolean;
  /** An inline note's place in the diff: the new path and line, or the old ones for a removed line. */
  position: {
    path: string;
    line: number;
    oldPath: string | null;
    oldLine: number | null;
    newLine: number | null;
  } | null;
}

/** One file of a merge request's diff. */
export interface GitlabDiff {
  oldPath: string;
  newPath: string;
  diff: string;
}

/** Pages of 100 read for a merge request's notes or diffs: 2,000 is far past what a person reviews. */
const MAX_NOTE_PAGES = 20;

/**
 * The merge request calls beside the connection (they use its stored token and base URL).
 * Every failure is an `UpstreamError` (502) carrying GitLab's own message, e.g. a token without the `api`
 * scope; never the token.
 * @throws {ConflictError} when GitLab is not connected (callers answer 412 before calling).
 */
export function createGitlabMergeRequests(
  gitlab: Pick<Gitlab, "credential" | "status">,
  options: { fetch?: typeof fetch } = {},
): GitlabMergeRequests {
  const doFetch = options.fetch ?? fetch;

  async function call(
    method: string,
    path: string,
    options: { body?: unknown; ok?: number[]; signal?: AbortSignal } = {},
  ): Promise<Response> {
    const { body, ok = [], signal } = options;
    const token = gitlab.credential();
    if (!token) throw new ConflictError("GitLab is not connected");
    const { baseUrl } = gitlab.status();
    let res: Response;
    try {
      res = await doFetch(`${baseUrl}/api/v4${path}`, {
        method,
        headers: {
          "private-token": token,
          accept: "application/json",
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: signal
          ? AbortSignal.any([AbortSignal.timeout(TIMEOUT_MS), signal])
          : AbortSignal.timeout(TIMEOUT_MS),
      });
    } catch (error) {
      throw new UpstreamError(`Cannot reach GitLab at ${baseUrl}: ${(error as Error).message}`);
    }
    if (res.ok || ok.includes(res.status)) return res;
    throw new UpstreamError(
      `GitLab answered ${res.status} to ${method} ${path.split("?")[0]}: ${await messageOf(res)}`,
    );
  }
  const project = (repo: string) => `/projects/${encodeURIComponent(repo)}`;
  const read = async (res: Response) => toMergeRequest(await res.json());

  const api: GitlabMergeRequests = {
    async user() {
      const u = await (await call("GET", "/user")).json() as Record<string, unknown>;
      const str = (v: unknown) => (typeof v === "string" && v ? v : null);
      const username = str(u.username) ?? "lvmh";
      const host = new URL(gitlab.status().baseUrl).hostname;
      return {
        username,
        name: str(u.name) ?? username,
        email: str(u.commit_email) ?? str(u.email) ?? str(u.public_email) ??
          `${username}@users.noreply.${host}`,
      };
    },

    async create(repo, mr) {
      const res = await call("POST", `${project(repo)}/merge_requests`, {
        body: {
          source_branch: mr.sourceBranch,
          target_branch: mr.targetBranch,
          title: mr.title,
          ...(mr.description === undefined ? {} : { description: mr.description }),
        },
        ok: [409],
      });
      if (res.status !== 409) return { mergeRequest: await read(res), adopted: false };
      const message = await messageOf(res);
      const iid = /!(\d+)/.exec(message)?.[1];
      if (!iid) throw new UpstreamError(`GitLab answered 409: ${message}`);
      return { mergeRequest: await api.get(repo, Number(iid)), adopted: true };
    },

    async get(repo, iid, signal) {
      return await read(await call("GET", `${project(repo)}/merge_requests/${iid}`, { signal }));
    },

    async update(repo, iid, fields) {
      return await read(await call("PUT", `${project(repo)}/merge_requests/${iid}`, { body: fields }));
    },

    async notes(repo, iid) {
      const discussions = await pages(`${project(repo)}/merge_requests/${iid}/discussions`);
      const notes = discussions.flatMap((d) => {
        const list = (d as Record<string, unknown>)?.notes;
        return Array.isArray(list) ? list.map(toNote).filter((n): n is GitlabNote => n !== null) : [];
      });
      return notes.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id - b.id);
    },

    async diffs(repo, iid) {
      const items = await pages(`${project(repo)}/merge_requests/${iid}/diffs`);
      return items.flatMap((item) => {
        const d = item as Record<string, unknown>;
        return typeof d?.diff === "string" && typeof d.new_path === "string"
          ? [{
            oldPath: typeof d.old_path === "string" ? d.old_path : d.new_path,
            newPath: d.new_path,
            diff: d.diff,
          }]
          : [];
      });
    },
  };

  /** Every item of a paginated list (`x-next-page`), up to `MAX_NOTE_PAGES` pages. */
  async function pages(path: string): Promise<unknown[]> {
    const items: unknown[] = [];
    for (let page = 1; page <= MAX_NOTE_PAGES; page++) {
      const res = await call("GET", `${path}?per_page=${PER_PAGE}&page=${page}`);
      const body = await res.json();
      if (Array.isArray(body)) items.push(...body);
      const next = res.headers.get("x-next-page");
      if (!next || !Array.isArray(body) || body.length === 0) break;
    }
    return items;
  }
  return api;
}

/** GitLab's error text: `message` (a string, a list, or a field → list map) or `error`, bounded. */
async function messageOf(res: Response): Promise<string> {
  const text = await res.text().catch(() => "");
  let message: unknown = text;
  try {
    const body = JSON.parse(text) as Record<string, unknown>;
    message = body.message ?? body.error ?? text;
  } catch { /* not JSON: the text itself */ }
  if (Array.isArray(message)) message = message.join("; ");
  else if (message && typeof message === "object") {
    message = Object.entries(message).map(([k, v]) => `${k} ${Array.isArray(v) ? v.join(", ") : v}`).join(
      "; ",
    );
  }
  return String(message).slice(0, 500) || res.statusText;
}

function toNote(item: unknown): GitlabNote | null {
  const n = item as Record<string, unknown> | null;
  if (!n || typeof n.id !== "number") return null;
  const str = (v: unknown) => (typeof v === "string" ? v : null);
  const num = (v: unknown) => (typeof v === "number" && Number.isInteger(v) ? v : null);
  const author = n.author as Record<string, unknown> | null | undefined;
  const p = n.position as Record<string, unknown> | null | undefined;
  let position: GitlabNote["position"] = null;
  if (n.type === "DiffNote" && p) {
    const newLine = num(p.new_line);
    const oldLine = num(p.old_line);
    const path = str(p.new_path) ?? str(p.old_path);
    const line = newLine ?? oldLine;
    if (path && line !== null) position = { path, line, oldPath: str(p.old_path), oldLine, newLine };
  }
  return {
    id: n.id,
    author: str(author?.username) ?? "",
    body: str(n.body) ?? "",
    createdAt: str(n.created_at) ?? "",
    system: n.system === true,
    position,
  };
}

function toMergeRequest(item: unknown): GitlabMergeRequest {
  const m = item as Record<string, unknown>;
  const str = (v: unknown) => (typeof v === "string" ? v : null);
  const p = m.head_pipeline as Record<string, unknown> | null | undefined;
  const state = str(m.state);
  return {
    iid: Number(m.iid),
    webUrl: str(m.web_url) ?? "",
    // GitLab's `locked` is an open MR being merged.
    state: state === "merged" || state === "closed" ? state : "opened",
    sourceBranch: str(m.source_branch) ?? "",
    targetBranch: str(m.target_branch) ?? "",
    sha: str(m.sha),
    title: str(m.title) ?? "",
    pipeline: p && typeof p.id === "number"
      ? { id: p.id, status: str(p.status) ?? "unknown", webUrl: str(p.web_url) ?? "" }
      : null,
    mergeStatus: str(m.detailed_merge_status) ?? str(m.merge_status),
    notes: typeof m.user_notes_count === "number" ? m.user_notes_count : 0,
    updatedAt: str(m.updated_at),
  };
}
