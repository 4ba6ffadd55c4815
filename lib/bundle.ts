/**
 * The island bundle `static/client.js`: built with `deno bundle` from a generated entry (`boot` from
 * `client.tsx` plus every component in `islands/`, so a new island needs no registry edit), and rebuilt by
 * `ensureBundle()` at the daemon's start when stale, so no page is served a missing or out-of-date bundle.
 *
 * What the bundle is built from is the entry's own import graph (`deno info`), recorded beside the bundle at
 * each build: editing any module an island reaches, wherever it lives (`ui/`, `components/`, a shared
 * `lib/glance_text.ts`), makes the bundle stale, and nothing outside the graph does. Reading that record at
 * start costs a stat per input, not a graph walk.
 */
import { fileURLToPath, pathToFileURL } from "node:url";
import { join, relative } from "node:path";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
/** The bundle the pages load. */
export const BUNDLE_PATH = join(ROOT, "static", "client.js");
/** Where the bundle's inputs are recorded (not served: `routes/static.ts` knows no `.json` asset). */
const INPUTS = join("static", "client.inputs.json");

/** What a build records: the islands it registered, the files it read (relative to the root), and when. */
interface BuildRecord {
  islands: string[];
  inputs: string[];
  /** Start of the build (ms): an input changed after it may not be in the bundle. */
  started: number;
}

/** Names of the islands: PascalCase `.tsx` files directly in `islands/`. */
export async function islandNames(root: string = ROOT): Promise<string[]> {
  const names: string[] = [];
  for await (const e of Deno.readDir(join(root, "islands"))) {
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

async function run(args: string[], what: string): Promise<string> {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: ROOT,
    env: { NO_COLOR: "1", DENO_NO_UPDATE_CHECK: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const out = new TextDecoder().decode(stdout);
  if (code !== 0) {
    throw new Error(`${what}: deno ${args[0]} exited ${code}\n${new TextDecoder().decode(stderr)}${out}`);
  }
  return out;
}

/**
 * The repository's files that `entry` imports, directly or not (paths relative to the root, sorted), by
 * `deno info`: type-only imports included, npm packages left out (`deno.json` stands for them).
 * @throws {Error} with deno's output when the graph cannot be read
 */
export async function moduleGraph(entry: string): Promise<string[]> {
  const out = await run(
    ["info", "--json", "--config", join(ROOT, "deno.json"), entry],
    "Cannot read the import graph",
  );
  const info = JSON.parse(out) as { modules: { local?: string }[] };
  const files = info.modules.map((m) => m.local).filter((p): p is string => !!p && p.startsWith(ROOT));
  return files.map((p) => relative(ROOT, p)).sort();
}

/**
 * Bundle and minify the islands into `static/client.js`, and record what it was built from. Both files are
 * written to a temp file, then renamed, so concurrent builds and readers never see half a file.
 * @throws {Error} with deno's output when bundling fails
 */
export async function build(): Promise<{ bytes: number; ms: number }> {
  const started = Date.now();
  const dir = await Deno.makeTempDir({ prefix: "lvmh-build-" });
  try {
    const islands = await islandNames();
    const entry = join(dir, "entry.tsx");
    await Deno.writeTextFile(entry, entrySource(islands));
    const out = join(dir, "client.js");
    const config = join(ROOT, "deno.json");
    const [, inputs] = await Promise.all([
      run(
        ["bundle", "--quiet", "--platform", "browser", "--minify", "--config", config, "-o", out, entry],
        "Cannot build the island bundle",
      ),
      moduleGraph(entry),
    ]);
    await replace(BUNDLE_PATH, await Deno.readFile(out));
    const record: BuildRecord = { islands, inputs: ["deno.json", ...inputs], started };
    await replace(join(ROOT, INPUTS), new TextEncoder().encode(JSON.stringify(record, null, 1) + "\n"));
    return { bytes: (await Deno.stat(BUNDLE_PATH)).size, ms: Date.now() - started };
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

async function replace(path: string, data: Uint8Array): Promise<void> {
  const staged = `${path}.${crypto.randomUUID()}.tmp`;
  await Deno.writeFile(staged, data);
  await Deno.rename(staged, path);
}

async function mtime(path: string): Promise<number | null> {
  try {
    return (await Deno.stat(path)).mtime?.getTime() ?? 0;
  } catch {
    return null;
  }
}

/**
 * True when `static/client.js` is missing, was built from another set of islands, or any file it was built
 * from changed (or went away) since its build started.
 * @param root the repository (a test passes a scratch copy)
 */
export async function bundleIsStale(root: string = ROOT): Promise<boolean> {
  if (await mtime(join(root, "static", "client.js")) === null) return true;
  let record: BuildRecord;
  try {
    record = JSON.parse(await Deno.readTextFile(join(root, INPUTS)));
  } catch {
    return true;
  }
  if ((await islandNames(root)).join() !== record.islands.join()) return true;
  for (const input of record.inputs) {
    const changed = await mtime(join(root, input));
    if (changed === null || changed > record.started) return true;
  }
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
