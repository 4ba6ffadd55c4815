import assert from "node:assert/strict";
import { toolView } from "./tool_view.ts";
import { highlight, languageOfPath } from "./highlight.ts";
import type { ToolCall } from "./conversation.ts";

function call(name: string, args: unknown, over: Partial<ToolCall> = {}): ToolCall {
  return {
    id: "c",
    name,
    argsJson: JSON.stringify(args),
    status: "done",
    approvalId: null,
    partial: "",
    resultPreview: "",
    resultText: null,
    details: undefined,
    seq: 1,
    inMessage: true,
    ...over,
  };
}

Deno.test("toolView() numbers an edit's diff from pi's firstChangedLine, and not without it", () => {
  const args = { path: "a.ts", oldText: "a\nb", newText: "a\nc" };
  const v = toolView(call("edit", args, { details: { firstChangedLine: 5 } }));
  assert.equal(v.kind, "edit");
  if (v.kind !== "edit") return;
  assert.equal(v.hunks[0].header, "@@ -5,2 +5,2 @@");
  assert.deepEqual(v.hunks[0].rows.map((r) => [r.op, r.oldNo, r.newNo]), [[" ", 5, 5], ["-", 6, null], [
    "+",
    null,
    6,
  ]]);
  const plain = toolView(call("edit", args));
  assert.equal(plain.kind === "edit" && plain.hunks[0].header, null);
});

Deno.test("toolView() shows bash, write and read by what they are", () => {
  assert.deepEqual(toolView(call("bash", { command: "ls" }, { resultText: "x" })), {
    kind: "bash",
    command: "ls",
    output: "x",
  });
  assert.equal(toolView(call("write", { path: "p", content: "c" })).kind, "write");
  const r = toolView(call("read", { path: "a.ts", offset: 10, limit: 5 }));
  assert.equal(r.kind === "read" && r.lines, "lines 10–14");
  assert.equal(toolView(call("bash", "not an object")).kind, "generic");
});

Deno.test("highlight() escapes what it wraps and knows languages by path", () => {
  const html = highlight("const a = '<script>';", "ts");
  assert.match(html, /<span class="hljs-keyword">const<\/span>/);
  assert.ok(!html.includes("<script>"));
  assert.equal(highlight("<b>", "no-such-language"), "&lt;b&gt;");
  assert.equal(languageOfPath("src/x.tsx"), "typescript");
  assert.equal(languageOfPath("Makefile"), null);
});
