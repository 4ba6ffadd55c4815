/**
 * A `write` card shows that call's own change as a diff. Its event carries only the new content, so the old
 * one comes from earlier calls of the same session's conversation: the latest earlier `write` of that path, or
 * a whole-file `read` result, carried forward through the `edit`s made since (each applied when its old text
 * is found exactly once, else the file's content is no longer known). With nothing known the file shows whole,
 * every line added. A `bash` call may change files too; nothing tells which, so it is not accounted for.
 */
import { createContext } from "preact";
import { useMemo, useRef } from "preact/hooks";
import { type DiffLine, lineDiff } from "./approval_view.ts";
import type { ToolCall } from "./conversation.ts";
import type { DiffRow } from "./tool_view.ts";

/** Lines of context around each change, as git shows them. */
const CONTEXT = 3;

/** The old content of each `write` call, by call id: null when no earlier call showed the file whole. */
export type WriteBases = ReadonlyMap<string, string | null>;

/** The page's `WriteBases` (the session page provides it; a card outside a page knows none). */
export const WriteBasesContext = createContext<WriteBases>(new Map());

/** The tools whose calls say what a file holds. */
const FILE_TOOLS = new Set(["write", "read", "edit"]);

// Parsed arguments by call: a call the conversation did not change is the same object, so each update of the
// page parses only the calls that are new or changed, not every write's content again.
const parsed = new WeakMap<ToolCall, Record<string, unknown> | null>();

function args(call: ToolCall): Record<string, unknown> | null {
  let a = parsed.get(call);
  if (a !== undefined) return a;
  try {
    const v = JSON.parse(call.argsJson || "{}");
    a = v && typeof v === "object" && !Array.isArray(v) ? v as Record<string, unknown> : null;
  } catch {
    a = null;
  }
  parsed.set(call, a);
  return a;
}

function str(a: Record<string, unknown>, ...keys: string[]): string | null {
  for (const k of keys) if (typeof a[k] === "string") return a[k] as string;
  return null;
}

/** One spelling per path: `./a.ts` and `a.ts` are the same file. */
function key(path: string): string {
  return path.replace(/^(\.\/)+/, "");
}

/** The file's text from a `read` result, or null when the result is not the whole file. */
function wholeRead(call: ToolCall, a: Record<string, unknown>): string | null {
  if (call.status !== "done" || call.resultText === null) return null;
  if (a.offset !== undefined || a.limit !== undefined) return null;
  const text = call.resultText;
  // pi says when it read only part of a file; the plugin marks a result it cut with a trailing ellipsis.
  if (/\n\n\[(Showing lines \d+-\d+ of \d+|\d+ more lines in file)[^\n]*\]$/.test(text)) return null;
  if (text.endsWith("…")) return null;
  return text;
}

/** The content after an `edit`, or null when one of its pairs does not apply exactly once. */
function applyEdit(content: string, a: Record<string, unknown>): string | null {
  const pairs = Array.isArray(a.edits) ? a.edits : [a];
  let out = content;
  for (const p of pairs) {
    if (!p || typeof p !== "object") return null;
    const e = p as Record<string, unknown>;
    const oldText = str(e, "oldText", "old_string", "old");
    const newText = str(e, "newText", "new_string", "new");
    if (oldText === null || newText === null || oldText === "") return null;
    const at = out.indexOf(oldText);
    if (at < 0 || out.indexOf(oldText, at + 1) >= 0) return null;
    out = out.slice(0, at) + newText + out.slice(at + oldText.length);
  }
  return out;
}

/**
 * The old content of each `write` among `calls`.
 * @param calls the conversation's tool calls in the order they were made
 */
export function writeBases(calls: readonly ToolCall[]): Map<string, string | null> {
  const known = new Map<string, string>();
  const bases = new Map<string, string | null>();
  for (const call of calls) {
    if (!FILE_TOOLS.has(call.name)) continue;
    const a = args(call);
    const path = a && str(a, "path", "file_path");
    if (!a || path === null) continue;
    const k = key(path);
    switch (call.name) {
      case "write": {
        const content = str(a, "content");
        if (content === null) break;
        bases.set(call.id, known.get(k) ?? null);
        // A write that failed or was refused left the file as it was.
        if (call.status === "error" || call.status === "rejected" || call.status === "stopped") break;
        known.set(k, content);
        break;
      }
      case "read": {
        const text = wholeRead(call, a);
        if (text !== null) known.set(k, text);
        break;
      }
      case "edit": {
        if (call.status !== "done") break;
        const before = known.get(k);
        if (before === undefined) break;
        const after = applyEdit(before, a);
        if (after === null) known.delete(k);
        else known.set(k, after);
        break;
      }
    }
  }
  return bases;
}

/** Whether two results of `writeBases` say the same for every write. */
export function sameBases(a: WriteBases, b: WriteBases): boolean {
  if (a.size !== b.size) return false;
  for (const [id, base] of a) if (!b.has(id) || b.get(id) !== base) return false;
  return true;
}

/**
 * `writeBases` for a page: the previous map while nothing it says changed, so the write cards (which read it
 * from `WriteBasesContext`) are not rendered again by every tool call's progress.
 */
export function useWriteBases(calls: readonly ToolCall[]): WriteBases {
  const last = useRef<WriteBases>(new Map());
  return useMemo(() => {
    const next = writeBases(calls);
    if (!sameBases(next, last.current)) last.current = next;
    return last.current;
  }, [calls]);
}

/** A hunk of a write's diff: git's header and its numbered rows. */
export interface WriteHunk {
  header: string;
  rows: DiffRow[];
}

function lines(text: string): string[] {
  if (text === "") return [];
  const out = text.split("\n");
  if (out.at(-1) === "") out.pop();
  return out;
}

/**
 * The hunks of `old` → `next` with three lines of context, numbered on both sides; with `old` null, the whole
 * file as added lines. The common start and end are set aside first, so a small change in a long file costs
 * its own lines (the line diff under them gives up past a few hundred lines: all removed, all added).
 */
export function writeHunks(old: string | null, next: string): WriteHunk[] {
  const b = lines(next);
  if (old === null) {
    if (b.length === 0) return [];
    return [{
      header: `@@ -0,0 +1,${b.length} @@`,
      rows: b.map((text, i) => ({ op: "+", text, oldNo: null, newNo: i + 1 })),
    }];
  }
  const a = lines(old);
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (
    tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]
  ) {
    tail++;
  }
  // Each line marked so that an empty one is still a line to lineDiff (which reads "" as none).
  const mark = (xs: string[]) => xs.map((x) => "." + x).join("\n");
  const middle: DiffLine[] = lineDiff(
    mark(a.slice(head, a.length - tail)),
    mark(b.slice(head, b.length - tail)),
  )
    .map((l) => ({ op: l.op, text: l.text.slice(1) }));
  const all: DiffLine[] = [
    ...a.slice(0, head).map((text) => ({ op: " " as const, text })),
    ...middle,
    ...a.slice(a.length - tail).map((text) => ({ op: " " as const, text })),
  ];
  // Number every line, then keep each run of changes with its context, joining runs whose contexts touch.
  let o = 1, n = 1;
  const rows: DiffRow[] = all.map((l) => {
    const row = { ...l, oldNo: l.op === "+" ? null : o, newNo: l.op === "-" ? null : n };
    if (l.op !== "+") o++;
    if (l.op !== "-") n++;
    return row;
  });
  const ranges: [number, number][] = [];
  for (let i = 0; i < rows.length;) {
    if (rows[i].op === " ") {
      i++;
      continue;
    }
    let j = i;
    while (j < rows.length && rows[j].op !== " ") j++;
    const from = Math.max(0, i - CONTEXT), to = Math.min(rows.length, j + CONTEXT);
    const last = ranges.at(-1);
    if (last && from <= last[1]) last[1] = to;
    else ranges.push([from, to]);
    i = j;
  }
  return ranges.map(([from, to]) => {
    const slice = rows.slice(from, to);
    return { header: hunkHeader(slice), rows: slice };
  });
}

function hunkHeader(rows: DiffRow[]): string {
  const olds = rows.filter((r) => r.op !== "+");
  const news = rows.filter((r) => r.op !== "-");
  // A side with no lines starts, as git writes it, at the line before the change.
  const oldStart = olds.length ? olds[0].oldNo! : Math.max(0, rows[0].newNo! - 1);
  const newStart = news.length ? news[0].newNo! : Math.max(0, rows[0].oldNo! - 1);
  return `@@ -${oldStart},${olds.length} +${newStart},${news.length} @@`;
}
