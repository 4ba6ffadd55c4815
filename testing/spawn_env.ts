/**
 * Test helper for spawn tests: a bare git repository served over smart HTTP behind the GitLab API fixture
 * (one loopback server, like a real GitLab), a stub worker image, and the real daemon pointed at all three.
 * `close()` stops everything and removes every container, volume and image the test made.
 */
import { type Daemon, startDaemon } from "./daemon.ts";
import { createBareRepo, gitHttpHandler } from "./fixtures/git_http.ts";
import { type FixtureProject, type GitlabFixture, startGitlabFixture } from "./fixtures/gitlab_fixture.ts";
import { buildStubWorker, cleanupDocker, DOCKER_SOCK, testEngine, uniq } from "./docker.ts";
import type { Engine } from "../docker/engine.ts";

export interface SpawnEnv {
  d: Daemon;
  engine: Engine;
  gitlab: GitlabFixture;
  git: ReturnType<typeof gitHttpHandler>["stats"];
  /** The personal access token the fixture accepts (and the git server demands). */
  pat: string;
  /** Repositories created, with README first line `readme of <path>`. */
  repos: string[];
  /** Where the bare repositories are: `<gitRoot>/<repo>.git`. */
  gitRoot: string;
  image: string;
  modelsJson: string;
  close(): Promise<void>;
}

/**
 * Start the fixtures and a daemon. `repoCount` repositories `group/sub/proj-<id>-<n>` are created and listed.
 * @param options.workerImage use this image (default: a fresh stub image, removed on close).
 * @param options.env extra daemon environment.
 * @param options.daemon how to run the daemon (default: `main.ts` as a subprocess), given its environment.
 */
export async function startSpawnEnv(
  options: {
    repoCount?: number;
    workerImage?: string;
    env?: Record<string, string>;
    extraProjects?: FixtureProject[];
    daemon?: (env: Record<string, string>) => Promise<Daemon>;
  } = {},
): Promise<SpawnEnv> {
  const id = uniq();
  const engine = testEngine();
  const pat = `glpat-${id}-${uniq()}`;
  const root = await Deno.makeTempDir({ prefix: "lvmh-spawn-git-" });
  const repos = Array.from({ length: options.repoCount ?? 1 }, (_, n) => `group/sub/proj-${id}-${n}`);
  for (const repo of repos) await createBareRepo(root, repo, { "README.md": `readme of ${repo}\n` });
  const git = gitHttpHandler({ root, password: pat });
  const gitlab = startGitlabFixture({
    token: pat,
    username: "alice",
    maxPerPage: 2,
    projects: [
      ...repos.map((path, n) => ({
        path,
        lastActivityAt: `2026-11-${String(10 + n).padStart(2, "0")}T10:00:00Z`,
      })),
      ...options.extraProjects ?? [],
    ],
    git: git.handle,
    gitRoot: root,
  });
  const image = options.workerImage ?? `lvmh-test-worker-${id}:latest`;
  if (!options.workerImage) await buildStubWorker(engine, image);
  const modelsJson = `${root}/models.json`;
  await Deno.writeTextFile(modelsJson, JSON.stringify({ providers: {} }));
  const env = {
    LVMH_CONTAINER_DOCKER_SOCK: DOCKER_SOCK!,
    LVMH_GITLAB_URL: gitlab.url,
    LVMH_WORKER_IMAGE: image,
    LVMH_WORKER_BASE_IMAGE: "lvmh-node-base:latest",
    LVMH_WORKER_NETWORK: "host",
    LVMH_MODELS_JSON: modelsJson,
    ...options.env,
  };
  const d = await (options.daemon ?? ((env) => startDaemon({ env })))(env);
  return {
    d,
    engine,
    gitlab,
    git: git.stats,
    pat,
    repos,
    gitRoot: root,
    image,
    modelsJson,
    async close() {
      await d.stop();
      await gitlab.close();
      await cleanupDocker(engine, { repos, images: options.workerImage ? [] : [image] });
      await Deno.remove(root, { recursive: true }).catch(() => {});
    },
  };
}

/** POST JSON through the daemon's API. */
export function post(d: Daemon, path: string, body: unknown): Promise<Response> {
  return d.api(path, { method: "POST", body: JSON.stringify(body) });
}
