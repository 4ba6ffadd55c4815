/**
 * How a tool call reads best, by tool: `edit` as a unified diff (old → new, with file line numbers when the
 * result says where the change starts), `write` as the file with its path, `bash` as a command with its
 * output, `read` as the path and the lines read; anything else as its arguments and result.
 */
import { type DiffLine, lineDiff } from "./approval_view.ts";
import type { ToolCall } from "./conversation.ts";

/** One row of a unified diff: the line numbers on each side where known. */
export interface DiffRow extends DiffLine {
  oldNo: number | null;
  newNo: number | null;
}

/** What the card shows for one call. */
export type ToolView =
  | { kind: "bash"; command: string; output: string }
  | { kind: "edit"; path: string; hunks: { header: string | null; rows: DiffRow[] }[] }
  | { kind: "write"; path: string; content: string }
  | { kind: "read"; path: string; lines: string | null; output: string }
  | { kind: "generic" };

function obj(v: unknown): Record<string, unknown> {
  return v && typeof v === "object" && !Array.isArray(v) ? v as Record<string, unknown> : {};
}

function str(a: Record<string, unknown>, ...keys: string[]): string | null {
  for (const k of keys) if (typeof a[k] === "string") return a[k] as string;
  return null;
}

function num(a: Record<string, unknown>, ...keys: string[]): number | null {
  for (const k of keys) if (typeof a[k] === "number" && Number.isFinite(a[k])) return a[k] as number;
  return null;
}

/**
 * Number a hunk's lines from `start` (the first line of the old text in the file) on both sides.
 * @param start the 1-based line of the hunk in the old file, or null when unknown (no numbers then)
 */
export function numberHunk(
  lines: DiffLine[],
  start: number | null,
): { header: string | null; rows: DiffRow[] } {
  if (start === null) return { header: null, rows: lines.map((l) => ({ ...l, oldNo: null, newNo: null })) };
  let o = start, n = start;
  const rows = lines.map((l) => {
    const row = { ...l, oldNo: l.op === "+" ? null : o, newNo: l.op === "-" ? null : n };
    if (l.op !== "+") o++;
    if (l.op !== "-") n++;
    return row;
  });
  const oldLen = lines.filter((l) => l.op !== "+").length;
  const newLen = lines.filter((l) => l.op !== "-").length;
  return { header: `@@ -${start},${oldLen} +${start},${newLen} @@`, rows };
}

/** The call's output so far: the result message's text, else the preview, else the streamed partial. */
export function outputOf(call: ToolCall): string {
  return call.resultText ?? (call.resultPreview || call.partial);
}

/**
 * The view of one call.
 * @param call the call as the conversation holds it
 */
export function toolView(call: ToolCall): ToolView {
  let args: Record<string, unknown>;
  try {
    args = obj(JSON.parse(call.argsJson || "{}"));
  } catch {
    return { kind: "generic" };
  }
  const path = str(args, "path", "file_path");
  switch (call.name) {
    case "bash": {
      const command = str(args, "command");
      return command === null ? { kind: "generic" } : { kind: "bash", command, output: outputOf(call) };
    }
    case "write": {
      const content = str(args, "content");
      return path === null || content === null ? { kind: "generic" } : { kind: "write", path, content };
    }
    case "read": {
      if (path === null) return { kind: "generic" };
      const offset = num(args, "offset");
      const limit = num(args, "limit");
      const from = offset ?? 1;
      const lines = offset === null && limit === null
        ? null
        : limit === null
        ? `from line ${from}`
        : `lines ${from}–${from + limit - 1}`;
      return { kind: "read", path, lines, output: outputOf(call) };
    }
    case "edit": {
      if (path === null) return { kind: "generic" };
      // pi's edit takes one oldText/newText pair, or (newer versions) a list of them.
      const pairs = Array.isArray(args.edits) ? args.edits.map(obj) : [args];
      // Where the change starts in the file, when pi's result details say it (one pair only: with several the
      // others' positions are not reported).
      const first = num(obj(call.details), "firstChangedLine");
      const hunks = pairs
        .map((e) => [str(e, "oldText", "old_string", "old"), str(e, "newText", "new_string", "new")] as const)
        .filter(([o, n]) => o !== null || n !== null)
        .map(([o, n]) => numberHunk(lineDiff(o ?? "", n ?? ""), pairs.length === 1 ? first : null));
      return hunks.length ? { kind: "edit", path, hunks } : { kind: "generic" };
    }
    default:
      return { kind: "generic" };
  }
}
