/**
 * The GitLab connection: a personal access token validated against the API v4 and kept in the deployment's
 * settings (lib/settings.ts: every replica reads the same connection), and the member projects listed by last activity. The token leaves this module only through
 * `credential()`, which the spawner hands to a clone helper as a file (never an env var or argument); no
 * API response, log line or error message ever contains it.
 */
import type { Config } from "./config.ts";
import { GITLAB_BASE_URL, GITLAB_TOKEN, GITLAB_USERNAME, type SettingsAccess } from "./settings.ts";
import { ConflictError, InvalidError, UnavailableError } from "./errors.ts";
import { type GitlabRepo, type GitlabStatus, RepoPath } from "./protocol.ts";

export type { GitlabRepo, GitlabStatus };

/** The GitLab connection the routes and the spawner use. */
export interface Gitlab {
  status(): GitlabStatus;
  /**
   * Validate `token` with `GET /api/v4/user` and store it.
   * @throws {InvalidError} when GitLab rejects the token; {UnavailableError} when GitLab cannot be reached.
   */
  connect(token: string): Promise<{ username: string }>;
  /** Forget the stored token. */
  disconnect(): Promise<void>;
  /**
   * Every member project, most recently active first (all pages); kept for `REPOS_TTL_MS` unless `refresh`.
   * @throws {ConflictError} when not connected or the token was revoked; {UnavailableError} as `connect`.
   */
  repos(options?: { refresh?: boolean }): Promise<GitlabRepo[]>;
  /** The clone URL of a project, with no credentials in it. */
  cloneUrl(repo: string): string;
  /** The stored token for clone credentials, or null; only for the spawner. */
  credential(): string | null;
}

const KEY_TOKEN = GITLAB_TOKEN;
const KEY_USER = GITLAB_USERNAME;
const KEY_BASE = GITLAB_BASE_URL;
/** Items per page of a GitLab list. */
export const PER_PAGE = 100;
/** 100 pages of 100: beyond that the picker is not the right tool anyway. */
const MAX_PAGES = 100;
/** One GitLab API call may take this long. */
export const TIMEOUT_MS = 15_000;
/** The project list is read page by page (slow for big accounts), so a panel reload reuses it this long. */
export const REPOS_TTL_MS = 60_000;

/**
 * Build the GitLab connection on the daemon's settings and config (`LVMH_GITLAB_URL`).
 * @param options.fetch replaces global fetch (tests).
 */
export function createGitlab(
  core: {
    config: Pick<Config, "gitlabUrl">;
    settings: SettingsAccess;
  },
  options: { fetch?: typeof fetch } = {},
): Gitlab {
  const { settings } = core;
  const baseUrl = core.config.gitlabUrl;
  const doFetch = options.fetch ?? fetch;
  /** The last project list, for the token that read it. */
  let cache: { token: string; at: number; repos: GitlabRepo[] } | null = null;

  /** The stored token, only if it was validated against this same GitLab (a changed URL must not get it). */
  function credential(): string | null {
    const token = settings.get(KEY_TOKEN);
    return token && settings.get(KEY_BASE) === baseUrl ? token : null;
  }

  async function get(path: string, token: string): Promise<Response> {
    let res: Response;
    try {
      res = await doFetch(`${baseUrl}/api/v4${path}`, {
        headers: { "private-token": token, accept: "application/json" },
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
    } catch (error) {
      throw new UnavailableError(`Cannot reach GitLab at ${baseUrl}: ${(error as Error).message}`);
    }
    if (res.status >= 500) {
      await res.body?.cancel();
      throw new UnavailableError(`GitLab at ${baseUrl} answered ${res.status}`);
    }
    return res;
  }

  return {
    status() {
      const token = credential();
      const username = settings.get(KEY_USER);
      return token
        ? { connected: true, baseUrl, ...(username ? { username } : {}) }
        : { connected: false, baseUrl };
    },

    async connect(token) {
      const res = await get("/user", token);
      if (!res.ok) {
        await res.body?.cancel();
        throw new InvalidError(`GitLab rejected the token (${res.status})`);
      }
      const user = await res.json() as { username?: unknown };
      if (typeof user.username !== "string") {
        throw new UnavailableError(`GitLab at ${baseUrl} sent no username`);
      }
      cache = null;
      // Together: another replica never reads a token with the previous one's user or GitLab.
      await settings.put({ [KEY_TOKEN]: token, [KEY_USER]: user.username, [KEY_BASE]: baseUrl });
      return { username: user.username };
    },

    async disconnect() {
      cache = null;
      await settings.put({ [KEY_TOKEN]: null, [KEY_USER]: null, [KEY_BASE]: null });
    },

    async repos(options = {}) {
      const token = credential();
      if (!token) throw new ConflictError("GitLab is not connected");
      if (!options.refresh && cache?.token === token && Date.now() - cache.at < REPOS_TTL_MS) {
        return cache.repos;
      }
      const all: GitlabRepo[] = [];
      let page = "1";
      for (let n = 0; n < MAX_PAGES && page; n++) {
        const q = new URLSearchParams({
          membership: "true",
          order_by: "last_activity_at",
          sort: "desc",
          simple: "true",
          per_page: String(PER_PAGE),
          page,
        });
        const res = await get(`/projects?${q}`, token);
        if (res.status === 401 || res.status === 403) {
          await res.body?.cancel();
          throw new ConflictError(
            `GitLab no longer accepts the stored token (${res.status}); connect again`,
          );
        }
        if (!res.ok) {
          await res.body?.cancel();
          throw new UnavailableError(`GitLab at ${baseUrl} answered ${res.status} listing projects`);
        }
        const items = await res.json() as unknown[];
        for (const item of Array.isArray(items) ? items : []) {
          const repo = toRepo(item);
          if (repo) all.push(repo);
        }
        page = nextPage(res, page, items.length);
      }
      // GitLab already sorts, but pages can shift while we read them; sort the union once more.
      all.sort((a, b) => (b.lastActivityAt ?? "").localeCompare(a.lastActivityAt ?? ""));
      const seen = new Set<string>();
      const repos = all.filter((r) => !seen.has(r.path) && seen.add(r.path));
      cache = { token, at: Date.now(), repos };
      return repos;
    },

    cloneUrl(repo) {
      return `${baseUrl}/${repo}.git`;
    },

    credential,
  };
}

/** `x-next-page` (empty on the last page), else a `Link: <…page=N…>; rel="next"` header. */
function nextPage(res: Response, current: string, count: number): string {
  const header = res.headers.get("x-next-page");
  if (header !== null) return /^\d+$/.test(header.trim()) ? header.trim() : "";
  const link = res.headers.get("link") ?? "";
  const next = /<([^>]+)>;\s*rel="next"/.exec(link);
  if (next) return new URL(next[1]).searchParams.get("page") ?? "";
  // No pagination headers at all: keep going only while pages are full.
  return count >= PER_PAGE ? String(Number(current) + 1) : "";
}

/** Map one API project; drop those whose path lvmh could not spawn (they would only fail later). */
function toRepo(item: unknown): GitlabRepo | null {
  const p = item as Record<string, unknown>;
  const path = p?.path_with_namespace;
  if (typeof path !== "string" || !RepoPath.safeParse(path).success) return null;
  const ns = p.namespace as Record<string, unknown> | undefined;
  const str = (v: unknown) => (typeof v === "string" ? v : null);
  return {
    path,
    name: str(p.name) ?? path.split("/").pop()!,
    namespace: str(ns?.full_path) ?? path.split("/").slice(0, -1).join("/"),
    lastActivityAt: str(p.last_activity_at),
    webUrl: str(p.web_url) ?? "",
    defaultBranch: str(p.default_branch),
  };
}
