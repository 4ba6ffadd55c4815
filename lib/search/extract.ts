/**
 * What of an event is searchable: the text of user and assistant messages (thinking too), a tool call's
 * arguments and its result preview, and a session's name, title, cwd and repo. Called on the write path for
 * every stored event, so it reads fields defensively (hot-path events skip the schema's defaults) and cheaply.
 */
import type { SearchKind } from "./types.ts";

/** One searchable text of one event. */
export interface SearchDoc {
  kind: SearchKind;
  role: string | null;
  toolName: string | null;
  body: string;
}

/** Characters of one event that are indexed: a 5 MB file written by a tool is found by its beginning. */
export const MAX_DOC_CHARS = 32 * 1024;
function clip(text: string): string {
  return text.length > MAX_DOC_CHARS ? text.slice(0, MAX_DOC_CHARS) : text;
}

function str(value: unknown): string {
  return typeof value === "string" ? value : "";
}

/** The string values of a tool call's arguments, in order (keys are the tool's, not what anyone said). */
function argsText(args: unknown, out: string[] = [], depth = 0): string[] {
  if (typeof args === "string") out.push(args);
  else if (typeof args === "number" || typeof args === "boolean") out.push(String(args));
  else if (args && typeof args === "object" && depth < 8) {
    for (const value of Array.isArray(args) ? args : Object.values(args)) argsText(value, out, depth + 1);
  }
  return out;
}

/** The searchable text of an event, or null when it has none. */
export function docOf(event: { type: string } & Record<string, unknown>): SearchDoc | null {
  switch (event.type) {
    case "message_end": {
      const message = event.message as Record<string, unknown> | undefined;
      if (!message) return null;
      const role = str(message.role);
      // A tool result's text is the tool's `resultPreview`, indexed with its tool_execution_end.
      if (role === "toolResult") return null;
      const body = [str(message.text), str(message.thinking)].filter(Boolean).join("\n");
      if (!body.trim()) return null;
      return { kind: role === "user" ? "prompt" : "message", role, toolName: null, body: clip(body) };
    }
    case "tool_execution_start": {
      const toolName = str(event.toolName);
      const body = [toolName, ...argsText(event.args)].join("\n");
      return { kind: "tool", role: null, toolName, body: clip(body) };
    }
    case "tool_execution_end": {
      const body = str(event.resultPreview);
      if (!body.trim()) return null;
      return { kind: "tool", role: null, toolName: str(event.toolName), body: clip(body) };
    }
    default:
      return null;
  }
}

/** The searchable text of a session snapshot: its name, title, cwd and repo. */
export function sessionText(info: Record<string, unknown>): string {
  return clip([str(info.name), str(info.title), str(info.cwd), str(info.repo)].filter(Boolean).join("\n"));
}
