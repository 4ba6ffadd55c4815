import assert from "node:assert/strict";
import { createTar } from "./tar.ts";
import { contextStream } from "./context.ts";

async function tarList(bytes: Uint8Array, flags = "-tv"): Promise<string> {
  const child = new Deno.Command("tar", {
    args: [flags, "-f", "-"],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  })
    .spawn();
  const w = child.stdin.getWriter();
  await w.write(bytes);
  await w.close();
  const out = await child.output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  return new TextDecoder().decode(out.stdout);
}

Deno.test("createTar() writes members GNU tar reads, long paths included", async () => {
  const long = "node_modules/" + "deep/".repeat(30) + "file.js";
  const bytes = createTar([
    { path: "dir", type: "dir" },
    {
      path: "dir/a.txt",
      type: "file",
      data: new TextEncoder().encode("hello"),
      mode: 0o400,
      uid: 1000,
      gid: 1000,
    },
    { path: long, type: "file", data: new Uint8Array(513) },
    { path: "link", type: "symlink", linkname: "dir/a.txt" },
  ]);
  assert.equal(bytes.length % 512, 0);
  const listing = await tarList(bytes, "-tvn");
  assert.match(listing, /^-r-------- 1000\/1000\s+5 .* dir\/a\.txt$/m);
  assert.ok(listing.includes(long), listing);
  assert.match(listing, /link -> dir\/a\.txt/);
});

Deno.test("createTar() refuses absolute and parent paths", () => {
  assert.throws(() => createTar([{ path: "/etc/passwd", type: "file" }]), TypeError);
  assert.throws(() => createTar([{ path: "a/../../b", type: "file" }]), TypeError);
});

Deno.test("contextStream() streams a directory tree as a tar, without source maps and types in node_modules", async () => {
  const root = await Deno.makeTempDir({ prefix: "lvmh-ctx-" });
  try {
    await Deno.mkdir(`${root}/docker/bridge/node_modules/x`, { recursive: true });
    await Deno.writeTextFile(`${root}/docker/worker.Dockerfile`, "FROM scratch\n");
    await Deno.writeTextFile(`${root}/docker/bridge/node_modules/x/index.js`, "export {}\n");
    for (const dev of ["index.js.map", "index.d.ts", "index.d.mts", "index.d.cts"]) {
      await Deno.writeTextFile(`${root}/docker/bridge/node_modules/x/${dev}`, "// development only\n");
    }
    await Deno.writeTextFile(`${root}/docker/bridge/types.d.ts`, "// outside node_modules: kept\n");
    await Deno.symlink("x/index.js", `${root}/docker/bridge/node_modules/y.js`);
    await Deno.mkdir(`${root}/plugin`);
    await Deno.writeTextFile(`${root}/plugin/lvmh-agent.mjs`, "// plugin\n");
    const bytes = new Uint8Array(await new Response(contextStream(root)).arrayBuffer());
    const names = (await tarList(bytes, "-t")).trim().split("\n");
    assert.deepEqual(names, [
      "docker/",
      "docker/worker.Dockerfile",
      "docker/bridge/",
      "docker/bridge/node_modules/",
      "docker/bridge/node_modules/x/",
      "docker/bridge/node_modules/x/index.js",
      "docker/bridge/node_modules/y.js",
      "docker/bridge/types.d.ts",
      "plugin/",
      "plugin/lvmh-agent.mjs",
    ]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
