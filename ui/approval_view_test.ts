import assert from "node:assert/strict";
import type { Approval } from "../lib/protocol.ts";
import { approvalView, lineDiff, prettyArgs, sameView } from "./approval_view.ts";

Deno.test("lineDiff() keeps common lines and marks removed and added ones in order", () => {
  const d = lineDiff("a\nb\nc", "a\nB\nc\nd");
  assert.deepEqual(d.map((l) => `${l.op}${l.text}`), [" a", "-b", "+B", " c", "+d"]);
  assert.deepEqual(lineDiff("", "x"), [{ op: "+", text: "x" }]);
});

Deno.test("prettyArgs() shows bash's command, write's path and content, edit's diff, else JSON", () => {
  assert.deepEqual(prettyArgs("bash", { command: "rm -rf build" }), {
    kind: "command",
    command: "rm -rf build",
    cwd: null,
  });
  assert.deepEqual(prettyArgs("write", { path: "a.txt", content: "hi" }), {
    kind: "write",
    path: "a.txt",
    content: "hi",
  });
  const edit = prettyArgs("edit", { path: "m.ts", oldText: "let x = 1;", newText: "const x = 1;" });
  assert.equal(edit.kind, "edit");
  if (edit.kind === "edit") {
    assert.equal(edit.path, "m.ts");
    assert.deepEqual(edit.hunks[0].map((l) => l.op), ["-", "+"]);
  }
  const many = prettyArgs("edit", {
    path: "m.ts",
    edits: [{ oldText: "a", newText: "b" }, { oldText: "c" }],
  });
  assert.equal(many.kind === "edit" && many.hunks.length, 2);
  assert.deepEqual(prettyArgs("bash", { nope: 1 }), { kind: "json", text: '{\n  "nope": 1\n}' });
});

Deno.test("approvalView() prefers the daemon's decided record, else what the events say", () => {
  const event = {
    id: "ap1",
    toolCallId: "c1",
    toolName: "bash",
    args: { command: "ls" },
    seq: 4,
    resolved: null,
  };
  assert.equal(approvalView("s", event, undefined)?.state, "pending");
  const aborted = { ...event, resolved: { decision: "reject" as const, by: "x", source: "abort", seq: 5 } };
  assert.equal(approvalView("s", aborted, undefined)?.state, "cancelled");
  const record: Approval = {
    id: "ap1",
    sessionId: "s",
    toolCallId: "c1",
    toolName: "bash",
    args: { command: "ls" },
    state: "approved",
    createdAt: 1,
    decidedBy: "admin",
    decidedAt: 2,
    reason: null,
    appliedAt: 3,
  };
  const v = approvalView("s", event, record);
  assert.equal(v?.state, "approved");
  assert.equal(v?.decidedBy, "admin");
  assert.equal(v?.appliedAt, 3);
  assert.equal(approvalView("s", undefined, undefined), null);
});

Deno.test("sameView(): equal fields (args by value) are the same view; any change is not", () => {
  const base = {
    id: "a1",
    sessionId: "s",
    toolCallId: "c1",
    toolName: "bash",
    args: { command: "ls" },
    state: "approved" as const,
    decidedBy: "alice",
    decidedAt: 5,
    reason: null,
    appliedAt: null,
    source: null,
  };
  assert.ok(sameView(base, { ...base, args: { command: "ls" } }));
  assert.ok(!sameView(base, { ...base, appliedAt: 9 }));
  assert.ok(!sameView(base, { ...base, args: { command: "rm" } }));
});
