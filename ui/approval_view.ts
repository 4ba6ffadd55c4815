/**
 * What an approval card shows: the daemon's record (who decided, when, delivered) merged with what the
 * conversation's events say, and the call's arguments made readable per tool — `bash` its command, `write` its
 * path and content, `edit` a line diff old → new, anything else pretty JSON.
 */
import type { Approval, ApprovalState } from "../lib/protocol.ts";
import type { ApprovalEvent } from "./conversation.ts";

/** One approval as its card shows it: the daemon's record (less its creation time), and where it was answered. */
export interface ApprovalView extends Omit<Approval, "createdAt"> {
  /** Where the applied answer came from (`web`, `terminal`, `abort`, `timeout`), once the plugin said. */
  source: string | null;
}

const STATE_OF_SOURCE: Record<string, ApprovalState> = { abort: "cancelled", timeout: "expired" };

/**
 * Merge the daemon's record (authoritative once present) with the conversation's events.
 * @param sessionId the session both belong to
 */
export function approvalView(
  sessionId: string,
  event: ApprovalEvent | undefined,
  record: Approval | undefined,
): ApprovalView | null {
  if (!event && !record) return null;
  const resolved = event?.resolved ?? null;
  const fromEvents: ApprovalState = resolved
    ? STATE_OF_SOURCE[resolved.source] ?? (resolved.decision === "approve" ? "approved" : "rejected")
    : "pending";
  return {
    id: record?.id ?? event!.id,
    sessionId,
    toolCallId: record?.toolCallId ?? event!.toolCallId,
    toolName: record?.toolName ?? event!.toolName,
    args: record ? record.args : event!.args,
    state: record && record.state !== "pending" ? record.state : fromEvents,
    decidedBy: record?.decidedBy ?? resolved?.by ?? null,
    decidedAt: record?.decidedAt ?? null,
    reason: record?.reason ?? null,
    appliedAt: record?.appliedAt ?? null,
    source: resolved?.source ?? null,
    ...(record?.kind === "budget" ? { kind: "budget" as const } : {}),
  };
}

/** A readable form of a call's arguments. */
export type PrettyArgs =
  | { kind: "command"; command: string; cwd: string | null }
  | { kind: "write"; path: string; content: string }
  | { kind: "edit"; path: string; hunks: DiffLine[][] }
  | { kind: "json"; text: string };

/** One line of a diff: kept, removed (old) or added (new). */
export interface DiffLine {
  op: " " | "-" | "+";
  text: string;
}

function obj(v: unknown): Record<string, unknown> {
  return v && typeof v === "object" && !Array.isArray(v) ? v as Record<string, unknown> : {};
}

function pick(args: Record<string, unknown>, ...keys: string[]): string | null {
  for (const k of keys) if (typeof args[k] === "string") return args[k] as string;
  return null;
}

/**
 * Format a call's arguments for a person deciding on it.
 * @param toolName pi's tool name (`bash`, `edit`, `write`, or any other)
 */
export function prettyArgs(toolName: string, raw: unknown): PrettyArgs {
  const args = obj(raw);
  const path = pick(args, "path", "file_path") ?? "?";
  if (toolName === "bash" && pick(args, "command") !== null) {
    return { kind: "command", command: pick(args, "command")!, cwd: pick(args, "cwd") };
  }
  if (toolName === "write" && pick(args, "content") !== null) {
    return { kind: "write", path, content: pick(args, "content")! };
  }
  if (toolName === "edit") {
    // pi's edit takes one oldText/newText pair, or (newer versions) a list of them.
    const pairs = Array.isArray(args.edits) ? args.edits.map(obj) : [args];
    const hunks = pairs
      .map((e) => [pick(e, "oldText", "old_string", "old"), pick(e, "newText", "new_string", "new")] as const)
      .filter(([o, n]) => o !== null || n !== null)
      .map(([o, n]) => lineDiff(o ?? "", n ?? ""));
    if (hunks.length) return { kind: "edit", path, hunks };
  }
  return { kind: "json", text: JSON.stringify(raw ?? {}, null, 2) };
}

/** Past this many lines on a side, a diff shows all old lines removed and all new ones added. */
const DIFF_MAX_LINES = 400;

/**
 * A line diff (longest common subsequence) of `old` → `next`.
 * @returns every line of both, in order, each kept, removed or added
 */
export function lineDiff(old: string, next: string): DiffLine[] {
  const a = old === "" ? [] : old.split("\n");
  const b = next === "" ? [] : next.split("\n");
  if (a.length > DIFF_MAX_LINES || b.length > DIFF_MAX_LINES) {
    return [
      ...a.map((text) => ({ op: "-" as const, text })),
      ...b.map((text) => ({ op: "+" as const, text })),
    ];
  }
  // lcs[i][j]: length of the longest common subsequence of a[i:] and b[j:].
  const lcs = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  const out: DiffLine[] = [];
  let i = 0, j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      out.push({ op: " ", text: a[i] });
      i++, j++;
    } else if (i < a.length && (j === b.length || lcs[i + 1][j] >= lcs[i][j + 1])) {
      // Removals first, as unified diffs show them.
      out.push({ op: "-", text: a[i++] });
    } else {
      out.push({ op: "+", text: b[j++] });
    }
  }
  return out;
}

/**
 * True when two views of one approval show the same: the page then keeps the older object, so the message
 * holding its card is not rendered again (every answer refetches the session's records, all new objects).
 */
export function sameView(a: ApprovalView, b: ApprovalView): boolean {
  return a.id === b.id && a.sessionId === b.sessionId && a.toolCallId === b.toolCallId &&
    a.toolName === b.toolName && a.state === b.state && a.decidedBy === b.decidedBy &&
    a.decidedAt === b.decidedAt && a.reason === b.reason && a.appliedAt === b.appliedAt &&
    a.source === b.source && (a.args === b.args || JSON.stringify(a.args) === JSON.stringify(b.args));
}
