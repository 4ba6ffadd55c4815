/** The committed plugin bundle is what `deno task build:plugin` builds from plugin/src/ now. */
import assert from "node:assert/strict";
import { buildPlugin, PLUGIN_BUNDLE } from "../scripts/build_plugin.ts";

Deno.test("plugin/lvmh-agent.mjs is a fresh build of plugin/src/ (run `deno task build:plugin`)", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-plugin-build-" });
  try {
    const fresh = await buildPlugin(`${dir}/lvmh-agent.mjs`);
    const committed = await Deno.readTextFile(PLUGIN_BUNDLE);
    assert.ok(fresh.includes("createLvmhAgent"), "the build holds the factory");
    // Node 20 has no WebSocket: the bundled ws needs a real require, not esbuild's throwing shim.
    assert.ok(fresh.includes('from "node:module"'), "the bundle gives ws a require");
    // The plugin takes the protocol's types from lib/protocol/ with type-only imports, which the bundler
    // erases: no schema code (zod) may reach the file every pi loads.
    assert.doesNotMatch(fresh, /zod/i, "the bundle holds no zod");
    assert.ok(
      committed === fresh,
      "plugin/lvmh-agent.mjs is stale: run `deno task build:plugin` and commit it",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
