/** The committed CLI bundle is what `deno task build:cli` builds from cli/src/ now, and runs as a command. */
import assert from "node:assert/strict";
import { buildCli, CLI_BUNDLE } from "../scripts/build_cli.ts";

Deno.test("cli/lvmh.mjs is a fresh build of cli/src/ (run `deno task build:cli`)", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-cli-build-" });
  try {
    const fresh = await buildCli(`${dir}/lvmh.mjs`);
    const committed = await Deno.readTextFile(CLI_BUNDLE);
    assert.ok(fresh.startsWith("#!/usr/bin/env node\n"), "the shebang is the first line");
    assert.ok(fresh.includes("watch and steer pi sessions"), "the build holds the CLI");
    // The protocol's types are imported as types only: no schema library in a file users run bare.
    assert.ok(!/zod/i.test(fresh), "no zod in the bundle");
    assert.ok(
      committed === fresh,
      "cli/lvmh.mjs is stale: run `deno task build:cli` and commit it",
    );
    assert.ok(((await Deno.stat(CLI_BUNDLE)).mode ?? 0o755) & 0o100, "cli/lvmh.mjs is executable");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
