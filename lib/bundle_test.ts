import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { bundleIsStale, moduleGraph } from "./bundle.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));

/** A scratch repository with one island, a module it imports, a bundle and its build record. */
async function scratch(): Promise<{ root: string; touch(path: string, at: number): Promise<void> }> {
  const root = await Deno.makeTempDir({ prefix: "lvmh-bundle-test-" });
  for (const dir of ["islands", "lib", "static"]) await Deno.mkdir(join(root, dir));
  const started = Date.now() - 60_000;
  const touch = async (path: string, at: number) => {
    await Deno.writeTextFile(join(root, path), "// file\n", { append: true });
    await Deno.utime(join(root, path), at / 1000, at / 1000);
  };
  await touch("islands/List.tsx", started - 1000);
  await touch("lib/glance_text.ts", started - 1000);
  await touch("static/client.js", started + 1000);
  await Deno.writeTextFile(
    join(root, "static/client.inputs.json"),
    JSON.stringify({ islands: ["List"], inputs: ["islands/List.tsx", "lib/glance_text.ts"], started }),
  );
  return { root, touch };
}

Deno.test("bundleIsStale() follows the files the bundle was built from", async (t) => {
  await t.step("fresh when nothing changed since the build", async () => {
    const { root } = await scratch();
    assert.equal(await bundleIsStale(root), false);
    await Deno.remove(root, { recursive: true });
  });
  await t.step("stale when a module the islands import changes, wherever it lives", async () => {
    const { root, touch } = await scratch();
    await touch("lib/glance_text.ts", Date.now());
    assert.equal(await bundleIsStale(root), true);
    await Deno.remove(root, { recursive: true });
  });
  await t.step("stale when an input goes away, an island is added, or the record is missing", async () => {
    const gone = await scratch();
    await Deno.remove(join(gone.root, "lib/glance_text.ts"));
    assert.equal(await bundleIsStale(gone.root), true);
    const added = await scratch();
    await added.touch("islands/Other.tsx", Date.now() - 120_000);
    assert.equal(await bundleIsStale(added.root), true);
    const unrecorded = await scratch();
    await Deno.remove(join(unrecorded.root, "static/client.inputs.json"));
    assert.equal(await bundleIsStale(unrecorded.root), true);
    for (const s of [gone, added, unrecorded]) await Deno.remove(s.root, { recursive: true });
  });
  await t.step("a change outside the recorded inputs leaves it fresh", async () => {
    const { root, touch } = await scratch();
    await touch("lib/store.ts", Date.now());
    assert.equal(await bundleIsStale(root), false);
    await Deno.remove(root, { recursive: true });
  });
});

Deno.test("moduleGraph() of the islands reaches the shared modules they import", async () => {
  const graph = await moduleGraph(join(ROOT, "islands", "SessionList.tsx"));
  for (
    const p of ["islands/SessionList.tsx", "ui/glance.ts", "lib/glance_text.ts", "components/SessionRow.tsx"]
  ) {
    assert.ok(graph.includes(p), `${p} in ${graph.join(", ")}`);
  }
  assert.ok(!graph.includes("lib/store.ts"), "no server module");
  assert.ok(graph.every((p) => !p.startsWith("node_modules/") && !p.startsWith(".")), graph.join(", "));
});
