/**
 * One generated file from a typed entry module with `deno bundle`, the way both committed Node bundles are
 * built (the plugin by `scripts/build_plugin.ts`, the CLI by `scripts/build_cli.ts`).
 */
import { fileURLToPath } from "node:url";
import { join } from "node:path";

/** The repository's root folder. */
export const ROOT = fileURLToPath(new URL("../", import.meta.url));

/**
 * Bundle `entry` into `out` with `header` in front, written to a temp file beside it and renamed, so a reader
 * never sees half a file.
 * @returns the bundle's text
 * @throws {Error} with deno bundle's output when bundling fails
 */
export async function bundleFile(
  entry: string,
  out: string,
  options: { header: string; mode?: number },
): Promise<string> {
  // The .mjs ending matters: deno bundle then gives bundled CommonJS (ws) a real `require`.
  const tmp = `${out}.${Deno.pid}.tmp.mjs`;
  try {
    const { code, stderr } = await new Deno.Command(Deno.execPath(), {
      args: [
        "bundle",
        "--quiet",
        "--platform",
        "deno",
        "--config",
        join(ROOT, "deno.json"),
        "-o",
        tmp,
        entry,
      ],
      cwd: ROOT,
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (code !== 0) throw new Error(`deno bundle failed: ${new TextDecoder().decode(stderr)}`);
    const text = options.header + await Deno.readTextFile(tmp);
    await Deno.writeTextFile(tmp, text);
    if (options.mode !== undefined) await Deno.chmod(tmp, options.mode);
    await Deno.rename(tmp, out);
    return text;
  } finally {
    await Deno.remove(tmp).catch(() => {});
  }
}
