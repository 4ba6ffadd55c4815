import assert from "node:assert/strict";
import { diffLines, splitRows, statusMark } from "./diff_view.ts";

const DIFF = `diff --git a/a.txt b/a.txt
index 1111111..2222222 100644
--- a/a.txt
+++ b/a.txt
@@ -1,4 +1,4 @@ title
 one
-two
-three
+2
 four
\\ No newline at end of file
`;

Deno.test("diffLines() numbers old and new lines and keeps only the header lines a reader needs", () => {
  assert.deepEqual(diffLines(DIFF), [
    { kind: "hunk", text: "@@ -1,4 +1,4 @@ title" },
    { kind: "ctx", text: "one", old: 1, new: 1 },
    { kind: "del", text: "two", old: 2 },
    { kind: "del", text: "three", old: 3 },
    { kind: "add", text: "2", new: 2 },
    { kind: "ctx", text: "four", old: 4, new: 3 },
    { kind: "meta", text: "\\ No newline at end of file" },
  ]);
  assert.deepEqual(
    diffLines("diff --git a/x b/y\nsimilarity index 100%\nrename from x\nrename to y\n").map((l) => l.text),
    ["similarity index 100%", "rename from x", "rename to y"],
  );
});

Deno.test("splitRows() pairs deletions with the additions after them", () => {
  const rows = splitRows(diffLines(DIFF));
  assert.deepEqual(rows.map((r) => [r.hunk ?? null, r.left?.text ?? null, r.right?.text ?? null]), [
    ["@@ -1,4 +1,4 @@ title", null, null],
    [null, "one", "one"],
    [null, "two", "2"],
    [null, "three", null],
    [null, "four", "four"],
    ["\\ No newline at end of file", null, null],
  ]);
  assert.equal(statusMark("renamed"), "R");
});
