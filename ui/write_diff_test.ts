import assert from "node:assert/strict";
import type { ToolCall } from "./conversation.ts";
import { sameBases, writeBases, writeHunks } from "./write_diff.ts";

let seq = 0;
function call(name: string, args: unknown, extra: Partial<ToolCall> = {}): ToolCall {
  seq++;
  return {
    id: `c${seq}`,
    name,
    argsJson: JSON.stringify(args),
    status: "done",
    approvalId: null,
    partial: "",
    resultPreview: "",
    resultText: null,
    details: undefined,
    seq,
    inMessage: true,
    ...extra,
  };
}

Deno.test("writeBases(): a write's old content is the previous write of its path", () => {
  const w1 = call("write", { path: "a.txt", content: "one\n" });
  const other = call("write", { path: "b.txt", content: "b\n" });
  const w2 = call("write", { path: "./a.txt", content: "two\n" });
  const bases = writeBases([w1, other, w2]);
  assert.equal(bases.get(w1.id), null);
  assert.equal(bases.get(other.id), null);
  assert.equal(bases.get(w2.id), "one\n");
});

Deno.test("writeBases(): a whole-file read counts, a partial or cut one does not", () => {
  const r = call("read", { path: "a.txt" }, { resultText: "from disk\n" });
  const w = call("write", { path: "a.txt", content: "new\n" });
  assert.equal(writeBases([r, w]).get(w.id), "from disk\n");

  const part = call("read", { path: "b.txt", offset: 10 }, { resultText: "x" });
  const notice = call("read", { path: "c.txt" }, {
    resultText: "l1\nl2\n\n[Showing lines 1-2 of 900. Use offset=3 to continue.]",
  });
  const more = call("read", { path: "d.txt" }, {
    resultText: "l1\n\n[12 more lines in file. Use offset=2 to continue.]",
  });
  const cut = call("read", { path: "e.txt" }, { resultText: "long…" });
  const failed = call("read", { path: "f.txt" }, { status: "error", resultText: "ENOENT" });
  const writes = ["b", "c", "d", "e", "f"].map((p) => call("write", { path: `${p}.txt`, content: "z" }));
  const bases = writeBases([part, notice, more, cut, failed, ...writes]);
  for (const w of writes) assert.equal(bases.get(w.id), null, w.argsJson);
});

Deno.test("writeBases(): edits since are applied; one that does not apply forgets the content", () => {
  const w1 = call("write", { path: "a.ts", content: "let a = 1;\nlet b = 2;\n" });
  const e1 = call("edit", { path: "a.ts", oldText: "b = 2", newText: "b = 3" });
  const e2 = call("edit", { path: "a.ts", edits: [{ oldText: "a = 1", newText: "a = 0" }] });
  const w2 = call("write", { path: "a.ts", content: "final\n" });
  assert.equal(writeBases([w1, e1, e2, w2]).get(w2.id), "let a = 0;\nlet b = 3;\n");

  const lost = call("edit", { path: "a.ts", oldText: "missing", newText: "x" });
  const w3 = call("write", { path: "a.ts", content: "z\n" });
  assert.equal(writeBases([w1, lost, w3]).get(w3.id), null);
  // A refused edit changed nothing.
  const refused = call("edit", { path: "a.ts", oldText: "missing", newText: "x" }, { status: "rejected" });
  const w4 = call("write", { path: "a.ts", content: "z\n" });
  assert.equal(writeBases([w1, refused, w4]).get(w4.id), "let a = 1;\nlet b = 2;\n");
});

Deno.test("writeBases(): a failed write leaves the old content in place", () => {
  const w1 = call("write", { path: "a", content: "1\n" });
  const bad = call("write", { path: "a", content: "2\n" }, { status: "error" });
  const w3 = call("write", { path: "a", content: "3\n" });
  const bases = writeBases([w1, bad, w3]);
  assert.equal(bases.get(bad.id), "1\n");
  assert.equal(bases.get(w3.id), "1\n");
});

Deno.test("writeHunks(): an unknown old content shows the file whole, added", () => {
  assert.deepEqual(writeHunks(null, "a\nb\n"), [{
    header: "@@ -0,0 +1,2 @@",
    rows: [
      { op: "+", text: "a", oldNo: null, newNo: 1 },
      { op: "+", text: "b", oldNo: null, newNo: 2 },
    ],
  }]);
  assert.deepEqual(writeHunks(null, ""), []);
  assert.deepEqual(writeHunks("same\n", "same\n"), []);
});

Deno.test("writeHunks(): a change in a long file is one hunk with three lines of context", () => {
  const old = Array.from({ length: 1000 }, (_, i) => `line ${i + 1}`);
  const next = [...old];
  next[499] = "changed";
  const hunks = writeHunks(old.join("\n") + "\n", next.join("\n") + "\n");
  assert.equal(hunks.length, 1);
  assert.equal(hunks[0].header, "@@ -497,7 +497,7 @@");
  assert.deepEqual(hunks[0].rows.map((r) => `${r.op}${r.text}`), [
    " line 497",
    " line 498",
    " line 499",
    "-line 500",
    "+changed",
    " line 501",
    " line 502",
    " line 503",
  ]);
  assert.deepEqual(hunks[0].rows.find((r) => r.op === "+"), {
    op: "+",
    text: "changed",
    oldNo: null,
    newNo: 500,
  });
});

Deno.test("writeHunks(): changes far apart are two hunks, near ones one; empty lines count", () => {
  const old = Array.from({ length: 30 }, (_, i) => `l${i + 1}`);
  const far = [...old];
  far[1] = "x";
  far[25] = "y";
  assert.deepEqual(writeHunks(old.join("\n"), far.join("\n")).map((h) => h.header), [
    "@@ -1,5 +1,5 @@",
    "@@ -23,7 +23,7 @@",
  ]);
  const near = [...old];
  near[1] = "x";
  near[7] = "y";
  assert.equal(writeHunks(old.join("\n"), near.join("\n")).length, 1);
  // An empty line added at the end of the file, and a line removed.
  assert.deepEqual(writeHunks("a\nb\n", "a\n\n").map((h) => h.rows.map((r) => `${r.op}${r.text}`)), [
    [" a", "-b", "+"],
  ]);
  assert.deepEqual(writeHunks("a\nb\nc\n", "a\nc\n")[0].header, "@@ -1,3 +1,2 @@");
});

Deno.test("writeBases() skips other tools; sameBases() compares by write", () => {
  const w1 = call("write", { path: "a", content: "1\n" });
  const bash = call("bash", { command: "echo", path: "a" });
  const w2 = call("write", { path: "a", content: "2\n" });
  const one = writeBases([w1, bash, w2]);
  assert.deepEqual([...one], [[w1.id, null], [w2.id, "1\n"]]);
  assert.ok(sameBases(one, writeBases([w1, w2])));
  assert.ok(!sameBases(one, writeBases([w1])));
  assert.ok(!sameBases(one, new Map([[w1.id, null], [w2.id, "other"]])));
});
