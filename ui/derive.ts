/**
 * Todos and subagent runs, derived in the browser from tool calls (the protocol carries no such events).
 * Shaped after pi's example extensions: `todo` (`action` list/add/toggle/clear, state in the result's
 * `details`) and `subagent` (single `{agent, task}`, parallel `{tasks}`, chain `{chain}`).
 */
import type { ToolCall } from "./conversation.ts";

export interface Todo {
  id: number;
  text: string;
  done: boolean;
}

export interface TodoState {
  todos: Todo[];
  /** Seq of the tool call the state was last changed by; 0 when no todo call was seen. */
  seq: number;
}

function parseArgs(call: ToolCall): Record<string, unknown> {
  try {
    const v = JSON.parse(call.argsJson || "{}");
    return v && typeof v === "object" && !Array.isArray(v) ? v : {};
  } catch {
    return {};
  }
}

function todosFromDetails(details: unknown): Todo[] | null {
  const list = (details as { todos?: unknown } | null | undefined)?.todos;
  if (!Array.isArray(list)) return null;
  return list.filter((t) => t && typeof t === "object").map((t, i) => ({
    id: typeof t.id === "number" ? t.id : i + 1,
    text: typeof t.text === "string" ? t.text : String(t.content ?? ""),
    done: t.done === true || t.status === "completed",
  }));
}

/** `[x] #3: text` lines, as the example's `list` action prints them. */
function todosFromListText(text: string): Todo[] | null {
  if (/^\s*No todos\s*$/i.test(text)) return [];
  const out: Todo[] = [];
  for (const line of text.split("\n")) {
    const m = /^\s*\[( |x|X)\]\s*#(\d+):\s?(.*)$/.exec(line);
    if (m) out.push({ id: Number(m[2]), done: m[1] !== " ", text: m[3] });
  }
  return out.length ? out : null;
}

/**
 * The latest todo list: from a result's `details` when the plugin forwarded it, else replayed from each call's
 * arguments and result text. Failed calls change nothing.
 * @param calls tool calls in call order
 */
export function deriveTodos(calls: readonly ToolCall[]): TodoState {
  let todos: Todo[] = [];
  let seq = 0;
  for (const call of calls) {
    if (call.name !== "todo" || call.status !== "done") continue;
    const fromDetails = todosFromDetails(call.details);
    const result = call.resultText ?? call.resultPreview;
    const args = parseArgs(call);
    seq = call.seq;
    if (fromDetails) {
      todos = fromDetails;
      continue;
    }
    if (/^Error:|not found/i.test(result)) continue;
    switch (args.action) {
      case "list":
        todos = todosFromListText(result) ?? todos;
        break;
      case "add": {
        const m = /#(\d+):\s?([\s\S]*)$/.exec(result);
        const text = typeof args.text === "string" ? args.text : m?.[2] ?? "";
        const id = m ? Number(m[1]) : Math.max(0, ...todos.map((t) => t.id)) + 1;
        todos = [...todos, { id, text, done: false }];
        break;
      }
      case "toggle": {
        const id = Number(args.id);
        const m = /#(\d+)\s+(completed|uncompleted)/.exec(result);
        todos = todos.map((t) => t.id === id ? { ...t, done: m ? m[2] === "completed" : !t.done } : t);
        break;
      }
      case "clear":
        todos = [];
        break;
    }
  }
  return { todos, seq };
}

export interface SubagentTask {
  agent: string;
  task: string;
}

export interface SubagentRun {
  id: string;
  mode: "single" | "parallel" | "chain";
  tasks: SubagentTask[];
  status: ToolCall["status"];
  /** Latest progress while running, the result when done. */
  output: string;
  seq: number;
}

function tasksOf(v: unknown): SubagentTask[] {
  if (!Array.isArray(v)) return [];
  return v.filter((t) => t && typeof t === "object").map((t) => ({
    agent: typeof t.agent === "string" ? t.agent : "?",
    task: typeof t.task === "string" ? t.task : "",
  }));
}

/**
 * Every subagent tool call as a run, newest first.
 * @param calls tool calls in call order
 */
export function deriveSubagents(calls: readonly ToolCall[]): SubagentRun[] {
  const runs: SubagentRun[] = [];
  for (const call of calls) {
    if (call.name !== "subagent") continue;
    const args = parseArgs(call);
    let mode: SubagentRun["mode"] = "single";
    let tasks: SubagentTask[];
    if (Array.isArray(args.chain)) {
      mode = "chain";
      tasks = tasksOf(args.chain);
    } else if (Array.isArray(args.tasks)) {
      mode = "parallel";
      tasks = tasksOf(args.tasks);
    } else {
      tasks = tasksOf([args]);
    }
    const output = call.resultText ?? (call.resultPreview || call.partial);
    runs.push({ id: call.id, mode, tasks, status: call.status, output, seq: call.seq });
  }
  return runs.reverse();
}

/** Tools that get a dedicated panel; every other tool (known or not) renders as a generic card. */
export const PANEL_TOOLS = new Set(["todo", "subagent"]);
