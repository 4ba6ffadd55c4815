/**
 * The architecture's two checkable rules (docs/ARCHITECTURE.md): no import cycle among `lib/` modules, and a
 * session's row changes only from the session registry.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../", import.meta.url));

Deno.test("architecture: no import cycle among lib/ modules (deno info main.ts)", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", "main.ts"],
    cwd: ROOT,
    stdout: "piped",
    stderr: "null",
  }).output();
  assert.equal(out.code, 0);
  const info = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    modules: {
      specifier: string;
      dependencies?: { code?: { specifier: string }; type?: { specifier: string } }[];
    }[];
  };
  const lib = (s: string) => s.includes("/lib/") && s.startsWith("file://");
  const graph = new Map<string, string[]>();
  for (const m of info.modules.filter((m) => lib(m.specifier))) {
    const deps = (m.dependencies ?? []).flatMap((d) => [d.code?.specifier, d.type?.specifier])
      .filter((s): s is string => s !== undefined && lib(s));
    graph.set(m.specifier, deps);
  }
  assert.ok(graph.size > 30, `found ${graph.size} lib modules`);
  const state = new Map<string, "open" | "done">();
  const cycles: string[] = [];
  const visit = (node: string, path: string[]) => {
    state.set(node, "open");
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === "open") {
        cycles.push([...path, node, next].map((s) => s.split("/lib/")[1]).join(" → "));
      } else if (!state.has(next)) visit(next, [...path, node]);
    }
    state.set(node, "done");
  };
  for (const node of graph.keys()) if (!state.has(node)) visit(node, []);
  assert.deepEqual(cycles, []);
});

Deno.test("architecture: session rows change only in lib/sessions.ts", async () => {
  const writers = /\.(upsertSession|setIdle|deleteSession)\(/;
  const offenders: string[] = [];
  for (const dir of ["lib", "routes"]) {
    for await (const path of walk(`${ROOT}${dir}`)) {
      if (path.endsWith("_test.ts") || path.endsWith("/lib/sessions.ts") || path.endsWith("/lib/store.ts")) {
        continue;
      }
      const text = await Deno.readTextFile(path);
      for (const [i, line] of text.split("\n").entries()) {
        // The approvals' own table has a deleteSession of its own: it removes approvals, not session rows.
        if (writers.test(line) && !/store\.(upsertSession|setIdle|deleteSession)/.test(line)) continue;
        if (writers.test(line) && !path.endsWith("/lib/approvals.ts")) offenders.push(`${path}:${i + 1}`);
      }
    }
  }
  assert.deepEqual(offenders, []);
});

async function* walk(dir: string): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(dir)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) yield* walk(path);
    else if (/\.tsx?$/.test(entry.name)) yield path;
  }
}
