/**
 * The architecture's checkable rules (docs/ARCHITECTURE.md): no import cycle anywhere, one writer of session
 * rows, errors by kind, the browser's and the harness's import lines, docs that stand alone.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../", import.meta.url));

// Every hand-written module of the repository; the generated bundles are built from plugin/src and cli/src.
const SOURCES = [
  "lib",
  "ui",
  "routes",
  "islands",
  "components",
  "plugin/src",
  "cli/src",
  "docker",
  "testing",
  "tests",
  "bench",
  "scripts",
  "main.ts",
  "dev.ts",
  "client.tsx",
];

Deno.test("architecture: no import cycle anywhere in the repository, type-only imports included", async () => {
  const graph = new Map<string, string[]>();
  for (const dir of SOURCES) {
    for await (const path of walk(`${ROOT}${dir}`, /\.(tsx?|mjs)$/)) {
      const text = await Deno.readTextFile(path);
      graph.set(path.slice(ROOT.length), relativeImports(path, text));
    }
  }
  assert.ok(graph.size > 300, `found ${graph.size} modules`);
  assert.deepEqual(stronglyConnected(graph).map((c) => c.join(" ⇄ ")), []);
});

Deno.test("architecture: the cycle check finds a cycle of type-only imports", () => {
  const graph = new Map([
    ["a.ts", relativeImports(`${ROOT}a.ts`, 'import type { B } from "./b.ts";')],
    ["b.ts", relativeImports(`${ROOT}b.ts`, 'import { c } from "./c.ts";\nexport type B = 1;')],
    ["c.ts", relativeImports(`${ROOT}c.ts`, 'export { a } from "./a.ts";')],
    ["d.ts", relativeImports(`${ROOT}d.ts`, 'const m = await import("./a.ts");')],
  ]);
  assert.deepEqual(stronglyConnected(graph).map((c) => c.toSorted()), [["a.ts", "b.ts", "c.ts"]]);
});

Deno.test("architecture: the island bundle's import graph holds no server-only module", async () => {
  // Tree-shaking can hide a server module that the browser's graph reaches; its node: imports cannot hide.
  const entries = ["client.tsx"];
  for await (const e of Deno.readDir(`${ROOT}islands`)) {
    if (e.name.endsWith(".tsx")) entries.push(`islands/${e.name}`);
  }
  const reached = new Set<string>();
  for (const entry of entries) {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["info", "--json", entry],
      cwd: ROOT,
      stdout: "piped",
      stderr: "null",
    }).output();
    assert.equal(out.code, 0, entry);
    const info = JSON.parse(new TextDecoder().decode(out.stdout)) as { modules: { specifier: string }[] };
    for (const m of info.modules) reached.add(m.specifier);
  }
  assert.ok([...reached].some((s) => s.endsWith("/ui/live.ts")), "the graph reaches ui/");
  assert.deepEqual(
    [...reached].filter((s) => s.startsWith("node:") || /\/lib\/(store|daemon|app)\.ts$/.test(s)),
    [],
  );
});

/** The repository-relative paths a module imports, re-exports or dynamically imports by a relative path. */
function relativeImports(path: string, text: string): string[] {
  const found: string[] = [];
  const spec =
    /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*["'](\.[^"']+)["']|import\s*\(\s*["'](\.[^"']+)["']\s*\)|^import\s+["'](\.[^"']+)["']/gm;
  for (const m of text.matchAll(spec)) {
    found.push(fileURLToPath(new URL(m[1] ?? m[2] ?? m[3], `file://${path}`)).slice(ROOT.length));
  }
  return found;
}

/** Tarjan's strongly connected components of more than one module (or a module importing itself). */
function stronglyConnected(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || graph.get(v)!.includes(v)) found.push(component);
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

Deno.test("architecture: session rows change only in lib/sessions.ts", async () => {
  const writers = /\.(upsertSession|setIdle|deleteSession)\(/;
  const offenders: string[] = [];
  for (const dir of ["lib", "routes", "main.ts"]) {
    for await (const path of walk(`${ROOT}${dir}`)) {
      if (path.endsWith("_test.ts") || path.endsWith("/lib/sessions.ts") || path.endsWith("/lib/store.ts")) {
        continue;
      }
      // The storage layer (lib/storage/) is where session rows are kept, as lib/store.ts is.
      if (path.includes("/lib/storage/")) continue;
      const text = await Deno.readTextFile(path);
      for (const [i, line] of text.split("\n").entries()) {
        // The approvals' own table has a deleteSession of its own: it removes approvals, not session rows.
        if (writers.test(line) && !/store\.(upsertSession|setIdle|deleteSession)/.test(line)) continue;
        if (writers.test(line) && !path.endsWith("/lib/approvals.ts")) offenders.push(`${path}:${i + 1}`);
        // Nor SQL of its own on the sessions table (the store's methods above are the only way in).
        if (/(UPDATE|INSERT( OR \w+)? INTO|DELETE FROM) sessions\b/.test(line)) {
          offenders.push(`${path}:${i + 1}`);
        }
      }
    }
  }
  assert.deepEqual(offenders, []);
});

Deno.test("architecture: only the HTTP layer throws HttpError; domain code throws the kinds of lib/errors.ts", async () => {
  // lib/http.ts, lib/router.ts and lib/upgrade.ts are the HTTP layer; lib/hooks/body.ts reads hook bodies.
  const http = ["lib/http.ts", "lib/router.ts", "lib/upgrade.ts", "lib/hooks/body.ts"].map((p) =>
    `${ROOT}${p}`
  );
  const offenders: string[] = [];
  for await (const path of walk(`${ROOT}lib`)) {
    if (path.endsWith("_test.ts") || http.includes(path)) continue;
    const text = await Deno.readTextFile(path);
    for (const [i, line] of text.split("\n").entries()) {
      if (/\bHttpError\b/.test(line)) offenders.push(`${path.slice(ROOT.length)}:${i + 1}`);
    }
  }
  assert.deepEqual(offenders, []);
});

Deno.test("architecture: an unknown session is worded once (lib/errors.ts sessionNotFound)", async () => {
  const offenders: string[] = [];
  for (const dir of ["lib", "routes", "islands", "components", "ui"]) {
    for await (const path of walk(`${ROOT}${dir}`)) {
      if (path.endsWith("_test.ts") || path.endsWith("/lib/errors.ts")) continue;
      const text = await Deno.readTextFile(path);
      for (const [i, line] of text.split("\n").entries()) {
        if (/Session .*does not exist/.test(line)) offenders.push(`${path.slice(ROOT.length)}:${i + 1}`);
      }
    }
  }
  assert.deepEqual(offenders, []);
});

Deno.test("architecture: test-only packages stay out of the import map and deno.lock (deno task start)", async () => {
  // Deno installs everything the lock lists, `deno task start` included; tests import these by full specifier.
  const testOnly = ["playwright", "playwright-core"];
  const config = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`)) as {
    imports: Record<string, string>;
  };
  const lock = JSON.parse(await Deno.readTextFile(`${ROOT}deno.lock`)) as Record<string, unknown>;
  const named = [
    ...Object.entries(config.imports).flat(),
    ...Object.keys(lock.npm as Record<string, unknown> ?? {}),
    ...Object.keys((lock.specifiers ?? {}) as Record<string, unknown>),
  ];
  const found = named.filter((n) => testOnly.some((p) => new RegExp(`(^|[:/])${p}@`).test(n) || n === p));
  assert.deepEqual(found, []);
  assert.ok(named.some((n) => /preact@/.test(n)), "the check reads the lock's package names");
});

Deno.test("architecture: the docs stand alone (relative links stay in the repository and exist)", async () => {
  const docs = ["README.md", "PROTOCOL.md", "plugin/README.md", "cli/README.md", "docs/ARCHITECTURE.md"];
  for await (const e of Deno.readDir(`${ROOT}docs`)) if (e.name.endsWith(".md")) docs.push(`docs/${e.name}`);
  const broken: string[] = [];
  for (const doc of new Set(docs)) {
    const text = await Deno.readTextFile(`${ROOT}${doc}`);
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target) || target.startsWith("#")) continue;
      const file = new URL(target.split("#")[0], new URL(doc, `file://${ROOT}`));
      const inside = fileURLToPath(file).startsWith(ROOT);
      const exists = inside && await Deno.stat(file).then(() => true, () => false);
      if (!exists) broken.push(`${doc}: ${target}${inside ? "" : " (outside the repository)"}`);
    }
  }
  assert.deepEqual(broken, []);
});

Deno.test("architecture: every path docs/ARCHITECTURE.md names exists", async () => {
  const text = await Deno.readTextFile(`${ROOT}docs/ARCHITECTURE.md`);
  const paths = [
    ...text.matchAll(/`((?:lib|ui|routes|components|islands|tests|plugin|scripts|docker|docs)\/[^`\s…]*)`/g),
  ]
    .map((m) => m[1]);
  assert.ok(paths.length > 20, `found ${paths.length} paths`);
  const missing: string[] = [];
  for (const p of new Set(paths)) {
    if (!await Deno.stat(`${ROOT}${p}`).then(() => true, () => false)) missing.push(p);
  }
  assert.deepEqual(missing, []);
});

Deno.test("architecture: the browser calls REST routes only through ui/rest.ts (one typed function each)", async () => {
  // ui/api.ts is the fetch underneath (token, JSON, errors by kind) and the sign-in calls.
  const below = ["ui/rest.ts", "ui/api.ts"].map((p) => `${ROOT}${p}`);
  const offenders: string[] = [];
  for (const dir of ["islands", "components", "ui"]) {
    for await (const path of walk(`${ROOT}${dir}`)) {
      if (path.endsWith("_test.ts") || below.includes(path)) continue;
      const text = await Deno.readTextFile(path);
      for (const [i, line] of text.split("\n").entries()) {
        if (/\b(api|fetch)(<[^>]*>)?\(/.test(line)) offenders.push(`${path.slice(ROOT.length)}:${i + 1}`);
      }
    }
  }
  assert.deepEqual(offenders, []);
});

Deno.test("architecture: the browser's modules take wire types from the shared wire modules, not server modules", async () => {
  // What islands, components and ui/ may import from the rest of lib/: the protocol's types and constants,
  // and the small modules the daemon and the page share on purpose. Anything else (a store, lib/gitlab.ts,
  // the webhooks owner) is server code: its wire shapes belong in lib/protocol.ts, re-exported by ui/types.ts.
  const shared = [
    "lib/protocol.ts",
    "lib/wire.ts",
    "lib/glance_text.ts",
    "lib/notify/kinds.ts",
    "lib/image_limits.ts",
  ];
  const offenders: string[] = [];
  for (const dir of ["islands", "components", "ui"]) {
    for await (const path of walk(`${ROOT}${dir}`)) {
      if (path.endsWith("_test.ts")) continue;
      const text = await Deno.readTextFile(path);
      for (const [, spec] of text.matchAll(/from "(\.[^"]+)"/g)) {
        const target = fileURLToPath(new URL(spec, `file://${path}`)).slice(ROOT.length);
        if (!target.startsWith("lib/") || shared.includes(target)) continue;
        offenders.push(`${path.slice(ROOT.length)} imports ${target}`);
      }
    }
  }
  assert.deepEqual(offenders, []);
});

Deno.test("architecture: tests/, bench/, scripts/faults/ share helpers via testing/, never each other", async () => {
  // One harness: a helper that two of them need lives in testing/ (public names, no `_` prefix), so none of
  // them reaches into another's private files. The tests of the fault rows (tests/**/faults_*_test.ts) exist
  // to run the rows, so they alone import scripts/faults/.
  const owner = (path: string) =>
    ["testing/", "tests/", "bench/", "scripts/faults/", "scripts/faults.ts"].find((p) => path.startsWith(p));
  const offenders: string[] = [];
  for (const dir of ["testing", "tests", "bench", "scripts/faults", "scripts/faults.ts"]) {
    for await (const path of walk(`${ROOT}${dir}`)) {
      const from = path.slice(ROOT.length);
      const text = await Deno.readTextFile(path);
      for (const [, spec] of text.matchAll(/(?:from|import\(?)\s*"(\.[^"]+)"/g)) {
        const target = fileURLToPath(new URL(spec, `file://${path}`)).slice(ROOT.length);
        const [a, b] = [owner(from), owner(target)];
        if (!b || b === "testing/" || a === b) continue;
        if (a === "scripts/faults.ts" && b === "scripts/faults/") continue;
        if (a === "tests/" && b === "scripts/faults/" && /(^|\/)faults_[a-z_]+_test\.ts$/.test(from)) {
          continue;
        }
        offenders.push(`${from} imports ${target}`);
      }
    }
  }
  assert.deepEqual(offenders, []);
});

async function* walk(dir: string, files = /\.tsx?$/): AsyncGenerator<string> {
  if (files.test(dir)) return yield dir;
  for await (const entry of Deno.readDir(dir)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory && entry.name !== "node_modules") yield* walk(path, files);
    else if (files.test(entry.name)) yield path;
  }
}
