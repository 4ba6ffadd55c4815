import assert from "node:assert/strict";
import type { ToolCall } from "./conversation.ts";
import { deriveSubagents, deriveTodos } from "./derive.ts";

let seq = 0;
function call(name: string, args: unknown, result: string, extra: Partial<ToolCall> = {}): ToolCall {
  seq++;
  return {
    id: `c${seq}`,
    name,
    argsJson: JSON.stringify(args),
    status: "done",
    partial: "",
    resultPreview: result,
    resultText: result,
    details: undefined,
    approvalId: null,
    seq,
    inMessage: true,
    ...extra,
  };
}

Deno.test("deriveTodos() replays add, toggle and clear from arguments and result text", () => {
  const calls = [
    call("todo", { action: "add", text: "write tests" }, "Added todo #1: write tests"),
    call("todo", { action: "add", text: "ship" }, "Added todo #2: ship"),
    call("todo", { action: "toggle", id: 1 }, "Todo #1 completed"),
    call("bash", { command: "ls" }, "x"),
  ];
  assert.deepEqual(deriveTodos(calls).todos, [
    { id: 1, text: "write tests", done: true },
    { id: 2, text: "ship", done: false },
  ]);
  const cleared = deriveTodos([...calls, call("todo", { action: "clear" }, "Cleared 2 todos")]);
  assert.deepEqual(cleared.todos, []);
  assert.equal(cleared.seq, seq);
});

Deno.test("deriveTodos() takes a list result as the whole state, and details over text", () => {
  const list = call("todo", { action: "list" }, "[x] #4: a\n[ ] #5: b <i>");
  assert.deepEqual(deriveTodos([list]).todos, [
    { id: 4, text: "a", done: true },
    { id: 5, text: "b <i>", done: false },
  ]);
  const withDetails = call("todo", { action: "add", text: "z" }, "Added todo #9: z", {
    details: { action: "add", todos: [{ id: 9, text: "from details", done: false }], nextId: 10 },
  });
  assert.deepEqual(deriveTodos([list, withDetails]).todos, [{ id: 9, text: "from details", done: false }]);
});

Deno.test("deriveTodos() ignores failed, running, stopped and error-text calls", () => {
  const add = call("todo", { action: "add", text: "a" }, "Added todo #1: a");
  const calls = [
    add,
    call("todo", { action: "toggle", id: 7 }, "Todo #7 not found"),
    call("todo", { action: "add" }, "Error: text required for add"),
    call("todo", { action: "clear" }, "", { status: "error" }),
    call("todo", { action: "clear" }, "", { status: "running", resultText: null }),
    call("todo", { action: "clear" }, "", { status: "stopped", resultText: null }),
  ];
  assert.deepEqual(deriveTodos(calls).todos, [{ id: 1, text: "a", done: false }]);
  assert.deepEqual(deriveTodos([call("todo", "not json", "x", { argsJson: "{oops" })]).todos, []);
});

Deno.test("deriveSubagents() reads single, parallel and chain calls, newest first", () => {
  const runs = deriveSubagents([
    call("subagent", { agent: "scout", task: "find auth" }, "found it"),
    call("subagent", { tasks: [{ agent: "a", task: "1" }, { agent: "b", task: "2" }] }, "", {
      status: "running",
      resultText: null,
      resultPreview: "",
      partial: "1/2 done",
    }),
    call("subagent", { chain: [{ agent: "planner", task: "plan" }, { agent: "worker" }] }, "ok"),
  ]);
  assert.deepEqual(runs.map((r) => r.mode), ["chain", "parallel", "single"]);
  assert.deepEqual(runs[0].tasks, [{ agent: "planner", task: "plan" }, { agent: "worker", task: "" }]);
  assert.equal(runs[1].status, "running");
  assert.equal(runs[1].output, "1/2 done");
  assert.deepEqual(runs[2].tasks, [{ agent: "scout", task: "find auth" }]);
});
