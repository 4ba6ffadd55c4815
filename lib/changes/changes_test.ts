import assert from "node:assert/strict";
import {
  CHANGE_LIMITS,
  changedFileFromOutput,
  type ChangeLimits,
  type Changes,
  CHANGES_SCRIPT,
  type ChangeScope,
  changesFromOutput,
  changesScriptArgs,
  newBoundary,
} from "./mod.ts";
import { cutDiff } from "./build.ts";
import { ChangesShape } from "../protocol/plugin.ts";

const GIT_ENV = {
  GIT_AUTHOR_NAME: "Ada",
  GIT_AUTHOR_EMAIL: "ada@example.com",
  GIT_COMMITTER_NAME: "Ada",
  GIT_COMMITTER_EMAIL: "ada@example.com",
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
};

async function git(dir: string, ...args: string[]): Promise<string> {
  const out = await new Deno.Command("git", {
    args,
    cwd: dir,
    env: GIT_ENV,
    stdout: "piped",
    stderr: "piped",
  })
    .output();
  if (!out.success) throw new Error(`git ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  return new TextDecoder().decode(out.stdout).trimEnd();
}

interface RunOptions {
  scope?: ChangeScope;
  base?: { sha: string; branch: string } | null;
  limits?: ChangeLimits;
}

/** Run the script as the plugin and the diff helper do, in `dir`. */
async function run(dir: string, o: RunOptions = {}): Promise<{ output: string; boundary: string }> {
  const boundary = newBoundary();
  const args = changesScriptArgs(boundary, o.scope ?? "all", o.base ?? null);
  const out = await new Deno.Command("sh", {
    args: ["-c", CHANGES_SCRIPT, "lvmh-changes", ...args],
    cwd: dir,
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { output: new TextDecoder().decode(out.stdout), boundary };
}

async function changes(dir: string, o: RunOptions = {}): Promise<Changes> {
  const { output, boundary } = await run(dir, o);
  return changesFromOutput(output, boundary, { scope: o.scope ?? "all", limits: o.limits ?? CHANGE_LIMITS });
}

/** A repository with one commit (the base) holding `files`. */
async function repo(files: Record<string, string>): Promise<{ dir: string; base: string }> {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-changes-" });
  await git(dir, "init", "-q", "-b", "main");
  for (const [path, text] of Object.entries(files)) await write(dir, path, text);
  await git(dir, "add", "-A");
  await git(dir, "commit", "-q", "--allow-empty", "-m", "base");
  return { dir, base: await git(dir, "rev-parse", "HEAD") };
}

async function write(dir: string, path: string, text: string | Uint8Array) {
  const full = `${dir}/${path}`;
  await Deno.mkdir(full.slice(0, full.lastIndexOf("/")), { recursive: true });
  if (typeof text === "string") await Deno.writeTextFile(full, text);
  else await Deno.writeFile(full, text);
}

function lines(n: number, prefix = "line"): string {
  return Array.from({ length: n }, (_, i) => `${prefix} ${i + 1}\n`).join("");
}

function byPath(c: Changes) {
  return Object.fromEntries(c.files.map((f) => [f.path, f]));
}

Deno.test("changes: counts, renames, untracked and deletions against the base; the agent's index untouched", async () => {
  const { dir, base } = await repo({ "a.txt": lines(10), "old/name.txt": lines(50), "gone.txt": "bye\n" });
  try {
    await write(dir, "a.txt", lines(10).replace("line 5\n", "five\n") + "more\n");
    await git(dir, "commit", "-q", "-am", "edit a");
    await Deno.mkdir(`${dir}/new`);
    await git(dir, "mv", "old/name.txt", "new/name.txt");
    await Deno.remove(`${dir}/gone.txt`);
    await write(dir, "fresh file.txt", "x\ny\n");
    const indexBefore = await Deno.readFile(`${dir}/.git/index`);
    const statusBefore = await git(dir, "status", "--porcelain");
    const c = await changes(dir, { base: { sha: base, branch: "main" } });
    assert.equal(c.scope, "all");
    assert.deepEqual(c.base, { branch: "main", sha: base });
    assert.equal(c.head, await git(dir, "rev-parse", "HEAD"));
    assert.equal(c.branch, "main");
    assert.deepEqual(c.stats, { files: 4, additions: 4, deletions: 2 });
    const f = byPath(c);
    assert.equal(f["a.txt"].status, "modified");
    assert.deepEqual([f["a.txt"].additions, f["a.txt"].deletions], [2, 1]);
    assert.match(f["a.txt"].diff!, /^diff --git a\/a.txt b\/a.txt\n/);
    assert.match(
      f["a.txt"].diff!,
      /\n@@ -2,9 \+2,10 @@ line 1\n line 2\n line 3\n line 4\n-line 5\n\+five\n/,
    );
    assert.deepEqual([f["new/name.txt"].status, f["new/name.txt"].oldPath], ["renamed", "old/name.txt"]);
    assert.match(f["new/name.txt"].diff!, /rename from old\/name.txt\nrename to new\/name.txt\n/);
    assert.deepEqual([f["gone.txt"].status, f["gone.txt"].deletions], ["deleted", 1]);
    assert.deepEqual([f["fresh file.txt"].status, f["fresh file.txt"].additions], ["added", 2]);
    assert.deepEqual(c.commits.map((x) => [x.title, x.author]), [["edit a", "Ada"]]);
    assert.ok(c.commits[0].at > Date.parse("2020-01-01") && c.commits[0].at <= Date.now() + 1000);
    assert.equal(c.truncated, undefined);
    // Nothing was staged, no object written into the repository's store.
    assert.deepEqual(await Deno.readFile(`${dir}/.git/index`), indexBefore);
    assert.equal(await git(dir, "status", "--porcelain"), statusBefore);
    assert.equal(await git(dir, "fsck", "--unreachable", "--no-reflogs"), "");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("changes: scope uncommitted is against HEAD, with no commits", async () => {
  const { dir, base } = await repo({ "a.txt": "one\n" });
  try {
    await write(dir, "a.txt", "two\n");
    await git(dir, "commit", "-q", "-am", "two");
    await write(dir, "b.txt", "new\n");
    const c = await changes(dir, { scope: "uncommitted", base: { sha: base, branch: "main" } });
    assert.equal(c.scope, "uncommitted");
    const head = await git(dir, "rev-parse", "HEAD");
    assert.deepEqual(c.base, { branch: "main", sha: head });
    assert.deepEqual(c.files.map((x) => x.path), ["b.txt"]);
    assert.deepEqual(c.commits, []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("changes: a 20 MB generated file is truncated with exact counts, a lockfile and a binary collapsed", async () => {
  const { dir, base } = await repo({ "keep.txt": "k\n" });
  try {
    const big = lines(1_200_000, "generated"); // ~24 MB
    assert.ok(big.length > 20_000_000);
    await write(dir, "gen/big.txt", big);
    await write(dir, "package-lock.json", lines(30, '"dep": 1'));
    await write(dir, "sub/Cargo.lock", "x\n");
    await write(dir, "image.png", new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 1, 2, 3, 0]));
    const c = await changes(dir, { base: { sha: base, branch: "main" } });
    const f = byPath(c);
    assert.deepEqual(
      [
        f["gen/big.txt"].truncated,
        f["gen/big.txt"].additions,
        f["gen/big.txt"].deletions,
        f["gen/big.txt"].diff,
      ],
      [true, 1_200_000, 0, undefined],
    );
    assert.deepEqual(
      [f["package-lock.json"].collapsed, f["package-lock.json"].additions, f["package-lock.json"].diff],
      [true, 30, undefined],
    );
    assert.equal(f["sub/Cargo.lock"].collapsed, true);
    assert.deepEqual(
      [f["image.png"].binary, f["image.png"].collapsed, f["image.png"].additions, f["image.png"].diff],
      [true, true, 0, undefined],
    );
    assert.equal(c.stats.additions, 1_200_000 + 30 + 1);
    assert.ok(JSON.stringify(c).length < 10_000);
    // The lockfile's diff is on the file endpoint.
    const { output, boundary } = await run(dir, { base: { sha: base, branch: "main" } });
    const lock = changedFileFromOutput(output, boundary, {
      scope: "all",
      limits: CHANGE_LIMITS,
      path: "package-lock.json",
    });
    assert.equal(lock?.collapsed, undefined);
    assert.match(lock!.diff!, /\n\+"dep": 1 30\n$/);
    assert.equal(
      changedFileFromOutput(output, boundary, { scope: "all", limits: CHANGE_LIMITS, path: "nope" }),
      null,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("changes: a diff over the line limit is cut after a whole line; past the budget files have counts only", async () => {
  const { dir, base } = await repo({});
  try {
    await write(dir, "long.txt", lines(6_000));
    for (let i = 0; i < 30; i++) await write(dir, `many/f${String(i).padStart(2, "0")}.txt`, lines(100));
    const c = await changes(dir, { base: { sha: base, branch: "main" } });
    const long = byPath(c)["long.txt"];
    assert.equal(long.truncated, true);
    assert.equal(long.additions, 6_000);
    assert.equal(long.diff!.split("\n").length - 1, 5_000);
    assert.ok(long.diff!.endsWith("\n"));
    assert.equal(c.truncated, undefined);

    const limits = { fileBytes: 1 << 20, fileLines: 5_000, totalBytes: 70_000 };
    const small = await changes(dir, { base: { sha: base, branch: "main" }, limits });
    assert.equal(small.truncated, true);
    assert.ok(JSON.stringify(small).length < 70_000);
    assert.equal(small.files.length, 31);
    assert.equal(small.stats.additions, 6_000 + 3_000);
    const cut = small.files.filter((x) => x.diff === undefined);
    assert.ok(cut.length > 0 && cut.every((x) => x.truncated === true && x.additions === 100));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("changes: without a base, the merge-base with the upstream, else HEAD", async () => {
  const { dir: upstream } = await repo({ "a.txt": "a\n" });
  const dir = await Deno.makeTempDir({ prefix: "lvmh-changes-" });
  try {
    await git(dir, "clone", "-q", upstream, ".");
    const forkPoint = await git(dir, "rev-parse", "HEAD");
    await write(dir, "b.txt", "b\n");
    await git(dir, "add", "b.txt");
    await git(dir, "commit", "-q", "-m", "local work");
    const c = await changes(dir);
    assert.deepEqual(c.base, { branch: "origin/main", sha: forkPoint });
    assert.deepEqual(c.commits.map((x) => x.title), ["local work"]);
    assert.deepEqual(c.files.map((x) => x.path), ["b.txt"]);

    await git(dir, "branch", "-q", "--unset-upstream");
    const noUpstream = await changes(dir);
    assert.deepEqual(noUpstream.base, { branch: "main", sha: await git(dir, "rev-parse", "HEAD") });
    assert.deepEqual(noUpstream.files, []);
  } finally {
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(upstream, { recursive: true });
  }
});

Deno.test("changes: outside a repository the answer is empty; a hostile config runs nothing", async () => {
  const plain = await Deno.makeTempDir({ prefix: "lvmh-changes-" });
  const { dir, base } = await repo({ "a.txt": "a\n" });
  try {
    const none = await changes(plain);
    assert.deepEqual(
      [none.base, none.head, none.branch, none.files, none.commits, none.stats],
      [null, null, null, [], [], { files: 0, additions: 0, deletions: 0 }],
    );
    const witness = `${plain}/ran`;
    const cmd = `touch ${witness}`;
    await git(dir, "config", "core.fsmonitor", cmd);
    await git(dir, "config", "core.hooksPath", plain);
    await git(dir, "config", "diff.external", cmd);
    await git(dir, "config", "diff.txt.textconv", cmd);
    await write(dir, ".gitattributes", "*.txt diff=txt\n");
    await Deno.writeTextFile(`${plain}/post-index-change`, `#!/bin/sh\n${cmd}\n`, { mode: 0o755 });
    await write(dir, "a.txt", "b\n");
    const c = await changes(dir, { base: { sha: base, branch: "main" } });
    assert.match(byPath(c)["a.txt"].diff!, /\n-a\n\+b\n$/);
    assert.equal(await Deno.stat(witness).then(() => true, () => false), false);
  } finally {
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(plain, { recursive: true });
  }
});

Deno.test("cutDiff() counts UTF-8 bytes and cuts after a whole line", () => {
  const limits = { fileBytes: 10, fileLines: 100, totalBytes: 100 };
  assert.deepEqual(cutDiff("ééé\nabc\n", limits), { text: "ééé\n", truncated: true });
  assert.deepEqual(cutDiff("ab\ncd\n", limits), { text: "ab\ncd\n", truncated: false });
  assert.deepEqual(cutDiff("a\nb\nc", { ...limits, fileLines: 2 }), { text: "a\nb\n", truncated: true });
});

Deno.test("changes: a commit title and author longer than the protocol takes are cut to its bounds", async () => {
  const { dir, base } = await repo({ "a.txt": "a\n" });
  try {
    await write(dir, "a.txt", "b\n");
    const long = "t".repeat(3_000);
    const out = await new Deno.Command("git", {
      args: ["commit", "-q", "-am", long],
      cwd: dir,
      env: { ...GIT_ENV, GIT_AUTHOR_NAME: "n".repeat(500) },
    }).output();
    assert.ok(out.success);
    const c = await changes(dir, { base: { sha: base, branch: "main" } });
    assert.equal(c.commits[0].title, long.slice(0, 1_000));
    assert.equal(c.commits[0].author.length, 200);
    assert.equal(ChangesShape.safeParse(c).success, true);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("changes: within a small budget, commits keep the newest and files their counts, marked truncated", async () => {
  const { dir, base } = await repo({});
  try {
    for (let i = 0; i < 40; i++) {
      await write(dir, `c${i}.txt`, `${i}\n`);
      await git(dir, "add", "-A");
      await git(dir, "commit", "-q", "-m", `commit ${i} ${"x".repeat(100)}`);
    }
    for (let i = 0; i < 300; i++) await write(dir, `many/file-with-a-long-name-${i}.txt`, "x\n");
    const limits = { fileBytes: 1 << 20, fileLines: 5_000, totalBytes: 20_000 };
    const c = await changes(dir, { base: { sha: base, branch: "main" }, limits });
    assert.equal(c.truncated, true);
    assert.ok(JSON.stringify(c).length <= 20_000, `${JSON.stringify(c).length}`);
    assert.ok(c.commits.length > 0 && c.commits.length < 40);
    assert.match(c.commits.at(-1)!.title, /^commit 39 /);
    assert.equal(c.stats.files, 340);
    assert.ok(c.files.length < 340);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("lib/changes: what the plugin bundles imports only its own modules and uses no Deno API", async () => {
  for (const name of ["mod.ts", "types.ts", "script.ts", "build.ts"]) {
    const text = await Deno.readTextFile(new URL(name, import.meta.url));
    const imports = [...text.matchAll(/^(?:import|export)\b[^;]*?from\s+"([^"]+)"/gms)].map((m) => m[1]);
    assert.ok(imports.every((i) => /^\.\/[a-z_]+\.ts$/.test(i)), `${name}: ${imports}`);
    assert.doesNotMatch(text, /\bDeno\./, name);
  }
});

Deno.test("changes: a file rewritten at the same size within the index's second is listed (racy git)", async () => {
  const { dir } = await repo({ "a.txt": "a\n" });
  try {
    // The rewrite keeps the size and the mtime the index recorded, and the index is as old as the file:
    // only a content check finds it, which git makes when the index is not newer than the entry.
    const then = new Date(Date.now() - 10_000);
    await Deno.utime(`${dir}/a.txt`, then, then);
    await git(dir, "add", "a.txt");
    await write(dir, "a.txt", "b\n");
    await Deno.utime(`${dir}/a.txt`, then, then);
    await Deno.utime(`${dir}/.git/index`, then, then);
    const c = await changes(dir, { scope: "uncommitted" });
    assert.match(byPath(c)["a.txt"]?.diff ?? "", /\n-a\n\+b\n$/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
