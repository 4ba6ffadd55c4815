/**
 * The worker image's build context: `docker/worker.Dockerfile`, the bridge (with the node_modules that
 * `scripts/setup_pi.sh` installed, less what only development needs) and the plugin, streamed as a tar so
 * ~120 MB never sits in memory.
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { TAR_END, tarEntry } from "./tar.ts";

/** The repository root, where the context paths are resolved by default. */
export const PROJECT_ROOT = fileURLToPath(new URL("../", import.meta.url));

/** What goes into the worker build context, relative to the project root. */
export const WORKER_CONTEXT_PATHS = ["docker/worker.Dockerfile", "docker/bridge", "plugin"];
/** The Dockerfile's path inside that context. */
export const WORKER_DOCKERFILE = "docker/worker.Dockerfile";

const SKIP = new Set([".git", ".DS_Store"]);
/**
 * Files under node_modules that nothing reads at run time: source maps and type declarations are half of the
 * bridge's ~20,000 files, and the engine's COPY of them took half of the first worker build (19 s of 35 s).
 */
const DEV_ONLY = /\.(map|d\.ts|d\.mts|d\.cts)$/;

/**
 * Stream a tar of `paths` (files or directories, relative to `root`), members in sorted order.
 * Symlinks are stored as symlinks; mtimes are zeroed so the engine's build cache keys stay stable.
 * @throws {Deno.errors.NotFound} (through the stream) when a listed path does not exist.
 */
export function contextStream(
  root: string,
  paths: string[] = WORKER_CONTEXT_PATHS,
): ReadableStream<Uint8Array> {
  const members = walk(root, paths);
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await members.next();
      if (next.done) {
        controller.enqueue(TAR_END);
        controller.close();
      } else {
        controller.enqueue(next.value);
      }
    },
    async cancel() {
      await members.return(undefined);
    },
  });
}

async function* walk(root: string, paths: string[]): AsyncGenerator<Uint8Array> {
  const dirsDone = new Set<string>();
  for (const rel of paths) {
    // Parent directories first, so extraction never depends on implicit directory creation.
    const segments = rel.split("/");
    for (let i = 1; i < segments.length; i++) {
      const dir = segments.slice(0, i).join("/");
      if (!dirsDone.has(dir)) {
        dirsDone.add(dir);
        yield tarEntry({ path: dir, type: "dir" });
      }
    }
    yield* member(root, rel, dirsDone);
  }
}

async function* member(root: string, rel: string, dirsDone: Set<string>): AsyncGenerator<Uint8Array> {
  const full = join(root, rel);
  const info = await Deno.lstat(full);
  const mode = (info.mode ?? 0o644) & 0o777;
  if (info.isSymlink) {
    yield tarEntry({ path: rel, type: "symlink", linkname: await Deno.readLink(full) });
  } else if (info.isDirectory) {
    if (!dirsDone.has(rel)) {
      dirsDone.add(rel);
      yield tarEntry({ path: rel, type: "dir", mode });
    }
    const names: string[] = [];
    const inModules = rel.includes("node_modules");
    for await (const e of Deno.readDir(full)) {
      if (SKIP.has(e.name) || (inModules && e.isFile && DEV_ONLY.test(e.name))) continue;
      names.push(e.name);
    }
    names.sort();
    for (const name of names) yield* member(root, `${rel}/${name}`, dirsDone);
  } else if (info.isFile) {
    yield tarEntry({ path: rel, type: "file", data: await Deno.readFile(full), mode });
  }
}

/** The files whose content decides whether a built worker image is still current (node_modules follow the lockfile). */
const DIGEST_FILES = [
  "docker/worker.Dockerfile",
  "docker/bridge/index.mjs",
  "docker/bridge/package.json",
  "docker/bridge/package-lock.json",
  "plugin/lvmh-agent.mjs",
  "plugin/package.json",
  "plugin/package-lock.json",
];

/**
 * A short digest of the worker's sources, stored as the image label `lvmh.context` so a daemon running newer
 * sources rebuilds an image it built from older ones. Missing files count as empty.
 */
export async function contextDigest(root: string = PROJECT_ROOT): Promise<string> {
  const hash = createHash("sha256");
  for (const rel of DIGEST_FILES) {
    hash.update(rel + "\0");
    try {
      hash.update(await Deno.readFile(join(root, rel)));
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
    hash.update("\0");
  }
  return hash.digest("hex").slice(0, 16);
}
