/**
 * Test helper for tests that drive a real Docker engine: the socket from `LVMH_TEST_DOCKER_SOCK` (set by the
 * test command after `scripts/dockerd.sh start`), the offline base image, a stub worker image, and cleanup
 * of everything a test made, found by its labels.
 */
import { fileURLToPath } from "node:url";
import { createEngine, type Engine } from "../docker/engine.ts";
import { createTar } from "../docker/tar.ts";
import { buildWorkerImage, workerImageStale } from "../docker/worker.ts";

export const ROOT = fileURLToPath(new URL("../", import.meta.url));
/** The engine socket for tests, or undefined: docker tests are then skipped with a message. */
export const DOCKER_SOCK = Deno.env.get("LVMH_TEST_DOCKER_SOCK");
export const BASE_IMAGE = "lvmh-node-base:latest";

/**
 * The real worker image (docker/worker.Dockerfile on `BASE_IMAGE`) for the tests that run it without testing
 * its build. A build takes 30–40 s here and each such test built its own: this one is built when missing or
 * made of other sources (its `lvmh.context` label), kept for the next test, and goes with the test engine
 * (scripts/dockerd.sh stop). Tests of the daemon's own build use a fresh name instead.
 */
export async function sharedWorkerImage(engine: Engine): Promise<string> {
  const image = "lvmh-test-worker:shared";
  if (await workerImageStale(engine, image)) {
    await buildWorkerImage(engine, { image, baseImage: BASE_IMAGE, network: "host" });
  }
  return image;
}

let warned = false;
/** `Deno.test` that is skipped (with one clear message) when no test engine is configured. */
export function dockerTest(name: string, fn: (t: Deno.TestContext) => Promise<void>): void {
  if (!DOCKER_SOCK && !warned) {
    warned = true;
    console.warn(
      "docker tests skipped: LVMH_TEST_DOCKER_SOCK is not set (run `scripts/dockerd.sh start` first)",
    );
  }
  Deno.test({ name, ignore: !DOCKER_SOCK, fn });
}

/** A client on the test engine. */
export function testEngine(): Engine {
  return createEngine({ socketPath: DOCKER_SOCK! });
}

/** Import `lvmh-node-base:latest` unless present (scripts/mkrootfs.sh is idempotent and locked). */
export async function ensureBaseImage(): Promise<void> {
  const out = await new Deno.Command(`${ROOT}scripts/mkrootfs.sh`, {
    env: { DOCKER_HOST: `unix://${DOCKER_SOCK}` },
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) throw new Error(`mkrootfs.sh failed: ${new TextDecoder().decode(out.stderr)}`);
}

/** A unique suffix for names a test creates. */
export function uniq(): string {
  return crypto.randomUUID().slice(0, 8);
}

/**
 * Build a worker image that runs the stub bridge instead of pi: same layout and user as
 * `docker/worker.Dockerfile` (uid 1000, /workspace and /pi-sessions owned by it).
 */
export async function buildStubWorker(engine: Engine, tag: string): Promise<void> {
  await ensureBaseImage();
  const dockerfile = `FROM ${BASE_IMAGE}
RUN mkdir -p /workspace /pi-sessions /home/node && chown 1000:1000 /workspace /pi-sessions /home/node
COPY stub_bridge.mjs /bridge/index.mjs
ENV NODE_OPTIONS=--experimental-websocket HOME=/home/node
LABEL lvmh.test="stub-worker"
USER 1000:1000
WORKDIR /workspace
CMD ["node", "/bridge/index.mjs"]
`;
  const enc = new TextEncoder();
  const tar = createTar([
    { path: "Dockerfile", type: "file", data: enc.encode(dockerfile) },
    {
      path: "stub_bridge.mjs",
      type: "file",
      data: await Deno.readFile(`${ROOT}testing/fixtures/stub_bridge.mjs`),
    },
  ]);
  await engine.imageBuild(tar as Uint8Array<ArrayBuffer>, { tag, dockerfile: "Dockerfile" });
}

/** Remove every container and volume labelled with one of `repos`, and the given images. Never throws. */
export async function cleanupDocker(
  engine: Engine,
  o: { repos?: string[]; images?: string[] },
): Promise<void> {
  for (const repo of o.repos ?? []) {
    const containers = await engine.containerList({ "lvmh.repo": repo }).catch(() => []);
    await Promise.all(containers.map((c) => engine.containerRemove(c.Id, true).catch(() => {})));
    for (const name of await engine.volumeList({ "lvmh.repo": repo }).catch(() => [])) {
      await engine.volumeRemove(name, true).catch(() => {});
    }
  }
  for (const image of o.images ?? []) await engine.imageRemove(image, true).catch(() => {});
}

/** Run a throwaway container on `image` and return its stdout (for looking inside volumes). */
export async function runOnce(
  engine: Engine,
  image: string,
  cmd: string[],
  mounts: { volume: string; target: string }[] = [],
): Promise<{ code: number; stdout: string; stderr: string }> {
  const id = await engine.containerCreate(`lvmh-test-${uniq()}`, {
    Image: image,
    Entrypoint: [],
    Cmd: cmd,
    Labels: { "lvmh.test": "run" },
    HostConfig: {
      NetworkMode: "none",
      Mounts: mounts.map((m) => ({ Type: "volume", Source: m.volume, Target: m.target })),
    },
  });
  try {
    await engine.containerStart(id);
    const code = await engine.containerWait(id, "not-running", 60_000);
    return { code, ...await engine.containerLogs(id) };
  } finally {
    await engine.containerRemove(id, true).catch(() => {});
  }
}
