import assert from "node:assert/strict";
import { contextDigest, contextStream } from "./context.ts";

/** A small context tree: the Dockerfile, a bridge with one installed module, a plugin. */
async function tree(): Promise<string> {
  const root = await Deno.makeTempDir({ prefix: "lvmh-context-test-" });
  await Deno.mkdir(`${root}/docker/bridge/node_modules/ws`, { recursive: true });
  await Deno.mkdir(`${root}/plugin`);
  await Deno.writeTextFile(`${root}/docker/worker.Dockerfile`, "FROM scratch\n");
  await Deno.writeTextFile(`${root}/docker/bridge/index.mjs`, "// bridge\n");
  await Deno.writeTextFile(`${root}/docker/bridge/node_modules/ws/index.js`, "module.exports = 1;\n");
  await Deno.writeTextFile(`${root}/plugin/lvmh-agent.mjs`, "// plugin\n");
  return root;
}

Deno.test("contextDigest() follows every file the build context carries, not a fixed list", async (t) => {
  const root = await tree();
  try {
    const first = await contextDigest(root);
    assert.match(first, /^[0-9a-f]{16}$/);
    await t.step("the same tree gives the same digest, whatever the mtimes", async () => {
      await Deno.utime(`${root}/plugin/lvmh-agent.mjs`, 1, 1);
      assert.equal(await contextDigest(root), first);
    });
    await t.step("a new file anywhere in the context changes it", async () => {
      await Deno.mkdir(`${root}/plugin/src`);
      await Deno.writeTextFile(`${root}/plugin/src/extra.ts`, "export {};\n");
      const withNew = await contextDigest(root);
      assert.notEqual(withNew, first);
      await Deno.remove(`${root}/plugin/src`, { recursive: true });
      assert.equal(await contextDigest(root), first);
    });
    await t.step("an edit of the same length changes it; a file's mode too", async () => {
      await Deno.writeTextFile(`${root}/docker/bridge/index.mjs`, "// BRIDGE\n");
      const edited = await contextDigest(root);
      assert.notEqual(edited, first);
      await Deno.chmod(`${root}/docker/bridge/index.mjs`, 0o755);
      assert.notEqual(await contextDigest(root), edited);
    });
    await t.step("an installed module counts by size (the lockfile holds its version)", async () => {
      const before = await contextDigest(root);
      await Deno.writeTextFile(`${root}/docker/bridge/node_modules/ws/index.js`, "module.exports = 2;\n");
      assert.equal(await contextDigest(root), before, "same size");
      await Deno.writeTextFile(`${root}/docker/bridge/node_modules/ws/index.js`, "module.exports = 22;\n");
      assert.notEqual(await contextDigest(root), before);
    });
    await t.step("the tar carries the same members the digest walks", async () => {
      const tar = new Uint8Array(await new Response(contextStream(root)).arrayBuffer());
      const text = new TextDecoder().decode(tar);
      for (const path of ["docker/worker.Dockerfile", "docker/bridge/node_modules/ws/index.js", "plugin/"]) {
        assert.ok(text.includes(path), path);
      }
    });
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
