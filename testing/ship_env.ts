/**
 * Test and bench helper: a spawned session's shipping world without a spawn. The in-process daemon on the
 * real engine with the worker-shaped stub image, the loopback GitLab (API and git smart HTTP with
 * receive-pack) holding one project, and `prepare()` to give the session a working copy as a spawn would:
 * the project's repository, the session's workspace record at its head, its `lvmh-work-<id>` volume filled
 * with a clone on its own branch. Registering the session (a row, or a scripted plugin) is the caller's.
 */
import type { Engine } from "../docker/engine.ts";
import { workspaceBranch, workVolumeName } from "../lib/workspaces.ts";
import { buildStubWorker, cleanupDocker, DOCKER_SOCK, testEngine, uniq } from "./docker.ts";
import { type InProcessDaemon, startInProcess } from "./inproc.ts";
import { createBareRepo, gitHttpHandler } from "./fixtures/git_http.ts";
import { startGitlabFixture } from "./fixtures/gitlab_fixture.ts";
import { bundleOf, fillWorkingCopy } from "./work_copy.ts";

export interface ShipEnv {
  engine: Engine;
  /** The stub worker image the helpers run (built by `prepare()`). */
  image: string;
  /** The GitLab project's path, and the token that reads and pushes it. */
  project: string;
  token: string;
  /** The project's bare repository on this machine (what a push reaches). */
  bare: string;
  gitHttp: ReturnType<typeof gitHttpHandler>;
  gl: ReturnType<typeof startGitlabFixture>;
  sessionId: string;
  /** The session's own branch and working-copy volume. */
  branch: string;
  volume: string;
  daemon: InProcessDaemon;
  /**
   * Build the image, create the project with `files` on `main`, record the session's workspace at that head
   * and fill its working copy. @returns the base sha
   */
  prepare(files: Record<string, string>): Promise<string>;
  /** Stop the daemon and GitLab, remove the volume, the repository, the image and the temp dir. */
  close(): Promise<void>;
}

/** Start the world; `name` tells its project, image and temp dir apart from other runs'. */
export async function startShipEnv(name: string): Promise<ShipEnv> {
  const engine = testEngine();
  const id = uniq();
  const image = `lvmh-${name}-worker-${id}:latest`;
  const project = `group/${name}-${id}`;
  const token = `glpat-${id}-${name}-token`;
  const root = await Deno.makeTempDir({ prefix: `lvmh-${name}-` });
  const gitHttp = gitHttpHandler({ root, password: token });
  const gl = startGitlabFixture({
    token,
    projects: [{ path: project, lastActivityAt: "2026-01-01T00:00:00Z" }],
    git: gitHttp.handle,
    gitRoot: root,
  });
  const sessionId = crypto.randomUUID();
  const branch = workspaceBranch(sessionId);
  const volume = workVolumeName(sessionId);
  const bare = `${root}/${project}.git`;
  const daemon = await startInProcess({
    env: {
      LVMH_CONTAINER_DOCKER_SOCK: DOCKER_SOCK!,
      LVMH_GITLAB_URL: gl.url,
      LVMH_WORKER_IMAGE: image,
      LVMH_WORKER_NETWORK: "host",
    },
  });
  return {
    engine,
    image,
    project,
    token,
    bare,
    gitHttp,
    gl,
    sessionId,
    branch,
    volume,
    daemon,
    async prepare(files) {
      await buildStubWorker(engine, image);
      const base = await createBareRepo(root, project, files);
      daemon.daemon.app.workspaces.record(sessionId, {
        repo: project,
        baseBranch: "main",
        baseSha: base,
        branch,
      });
      await engine.volumeCreate(volume, {
        "lvmh.managed": "true",
        "lvmh.session": sessionId,
        "lvmh.kind": "work",
      });
      await fillWorkingCopy(engine, {
        image,
        volume,
        bundle: await bundleOf(bare),
        branch,
        url: `${gl.url}/${project}.git`,
      });
      return base;
    },
    async close() {
      await daemon.stop();
      await gl.close();
      await engine.volumeRemove(volume, true).catch(() => {});
      await cleanupDocker(engine, { repos: [project], images: [image] });
      await Deno.remove(root, { recursive: true });
    },
  };
}
