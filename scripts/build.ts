/**
 * Build the island bundle `static/client.js` with `deno bundle` (`deno task build`), and `ensureBundle()`,
 * which `main.ts` calls so the daemon never serves a missing or stale bundle.
 *
 * The bundle entry is generated: it imports `boot` from `client.tsx` and every component in `islands/`, so a
 * new island file is picked up without editing a registry by hand.
 */
import { fileURLToPath, pathToFileURL } from "node:url";
import { join } from "node:path";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
/** The bundle the pages load. */
export const BUNDLE_PATH = join(ROOT, "static", "client.js");
/** Everything the bundle is built from; a change to any of it makes the bundle stale. */
const SOURCES = [
  "islands",
  "components",
  "ui",
  "client.tsx",
  "lib/protocol.ts",
  "lib/protocol",
  "deno.json",
];

/** Names of the islands: PascalCase `.tsx` files directly in `islands/`. */
export async function islandNames(): Promise<string[]> {
  const names: string[] = [];
  for await (const e of Deno.readDir(join(ROOT, "islands"))) {
    const m = /^([A-Z][A-Za-z0-9]*)\.tsx$/.exec(e.name);
    if (e.isFile && m) names.push(m[1]);
  }
  return names.sort();
}

function entrySource(names: string[]): string {
  const url = (p: string) => JSON.stringify(pathToFileURL(join(ROOT, p)).href);
  const lines = [`import { boot } from ${url("client.tsx")};`];
  names.forEach((n, i) => lines.push(`import I${i} from ${url(`islands/${n}.tsx`)};`));
  lines.push(`boot({ ${names.map((n, i) => `${n}: I${i}`).join(", ")} });`);
  return lines.join("\n") + "\n";
}

/**
 * Bundle and minify the islands into `static/client.js` (written to a temp file, then renamed, so concurrent
 * builds and readers never see half a file).
 * @throws {Error} with deno bundle's output when bundling fails
 */
export async function build(): Promise<{ bytes: number; ms: number }> {
  const started = performance.now();
  const dir = await Deno.makeTempDir({ prefix: "lvmh-build-" });
  try {
    const entry = join(dir, "entry.tsx");
    await Deno.writeTextFile(entry, entrySource(await islandNames()));
    const out = join(dir, "client.js");
    const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
      args: [
        "bundle",
        "--quiet",
        "--platform",
        "browser",
        "--minify",
        "--config",
        join(ROOT, "deno.json"),
        "-o",
        out,
        entry,
      ],
      cwd: ROOT,
      env: { NO_COLOR: "1", DENO_NO_UPDATE_CHECK: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (code !== 0) {
      const text = new TextDecoder().decode(stderr) + new TextDecoder().decode(stdout);
      throw new Error(`Cannot build the island bundle: deno bundle exited ${code}\n${text}`);
    }
    const staged = `${BUNDLE_PATH}.${crypto.randomUUID()}.tmp`;
    await Deno.copyFile(out, staged);
    await Deno.rename(staged, BUNDLE_PATH);
    return { bytes: (await Deno.stat(BUNDLE_PATH)).size, ms: Math.round(performance.now() - started) };
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

async function newestMtime(path: string): Promise<number> {
  let stat: Deno.FileInfo;
  try {
    stat = await Deno.stat(path);
  } catch {
    return 0;
  }
  let newest = stat.mtime?.getTime() ?? 0;
  if (stat.isDirectory) {
    for await (const e of Deno.readDir(path)) {
      newest = Math.max(newest, await newestMtime(join(path, e.name)));
    }
  }
  return newest;
}

/** True when `static/client.js` is missing or older than any of its sources. */
export async function bundleIsStale(): Promise<boolean> {
  const bundle = await newestMtime(BUNDLE_PATH);
  if (bundle === 0) return true;
  for (const s of SOURCES) if (await newestMtime(join(ROOT, s)) > bundle) return true;
  return false;
}

/**
 * Build the bundle when it is missing or stale; a no-op otherwise.
 * @returns whether a build ran
 * @throws {Error} when a needed build fails
 */
export async function ensureBundle(): Promise<boolean> {
  if (!await bundleIsStale()) return false;
  await build();
  return true;
}

if (import.meta.main) {
  const { bytes, ms } = await build();
  console.log(`static/client.js: ${(bytes / 1024).toFixed(1)} KiB in ${ms} ms`);
}
