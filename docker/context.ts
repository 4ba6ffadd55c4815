/**
 * The worker image's build context: `docker/worker.Dockerfile`, the bridge (with the node_modules that
 * `scripts/setup_pi.sh` installed, less what only development needs) and the plugin. One walk lists its
 * members; `contextStream` streams them as a tar (so ~100 MB never sits in memory) and `contextDigest`
 * hashes the same members, so the staleness label covers exactly what a build would copy.
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

/** One member of the context, in tar order; `read` loads a file's bytes only when asked. */
interface Member {
  path: string;
  type: "dir" | "file" | "symlink";
  mode?: number;
  size: number;
  linkname?: string;
  read?: () => Promise<Uint8Array>;
}

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
        return;
      }
      const { path, type, mode, linkname, read } = next.value;
      controller.enqueue(tarEntry({ path, type, mode, linkname, data: read ? await read() : undefined }));
    },
    async cancel() {
      await members.return(undefined);
    },
  });
}

async function* walk(root: string, paths: string[]): AsyncGenerator<Member> {
  const dirsDone = new Set<string>();
  for (const rel of paths) {
    // Parent directories first, so extraction never depends on implicit directory creation.
    const segments = rel.split("/");
    for (let i = 1; i < segments.length; i++) {
      const dir = segments.slice(0, i).join("/");
      if (!dirsDone.has(dir)) {
        dirsDone.add(dir);
        yield { path: dir, type: "dir", size: 0 };
      }
    }
    yield* member(root, rel, dirsDone);
  }
}

async function* member(root: string, rel: string, dirsDone: Set<string>): AsyncGenerator<Member> {
  const full = join(root, rel);
  const info = await Deno.lstat(full);
  const mode = (info.mode ?? 0o644) & 0o777;
  if (info.isSymlink) {
    yield { path: rel, type: "symlink", size: 0, linkname: await Deno.readLink(full) };
  } else if (info.isDirectory) {
    if (!dirsDone.has(rel)) {
      dirsDone.add(rel);
      yield { path: rel, type: "dir", mode, size: 0 };
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
    yield { path: rel, type: "file", mode, size: info.size, read: () => Deno.readFile(full) };
  }
}

/**
 * A short digest of the worker's build context, stored as the image label `lvmh.context` so a daemon running
 * newer sources rebuilds an image it built from older ones. Every member the tar would carry counts: its
 * path, kind, mode, link target and content. Under node_modules the size stands in for the content: they are
 * installed from the lockfiles (hashed in full), and reading their ~100 MB took two seconds per check.
 * @param paths the context's members (the worker context by default).
 * @throws {Deno.errors.NotFound} when a listed path does not exist.
 */
export async function contextDigest(
  root: string = PROJECT_ROOT,
  paths: string[] = WORKER_CONTEXT_PATHS,
): Promise<string> {
  const hash = createHash("sha256");
  for await (const m of walk(root, paths)) {
    hash.update(`${m.type}\0${m.path}\0${m.mode ?? ""}\0${m.linkname ?? ""}\0`);
    if (m.read && !m.path.includes("node_modules/")) hash.update(await m.read());
    else hash.update(String(m.size));
    hash.update("\0");
  }
  return hash.digest("hex").slice(0, 16);
}
