/**
 * The session page renders its messages in blocks of consecutive seqs, each skipped as a whole while none of
 * its messages changed, and laid out as one box while off screen: adding a slice of older history (or a live
 * message) then costs the blocks it touches, not a diff and a layout of every message held, which grew with
 * the history scrolled back through.
 */
import type { ApprovalView } from "./approval_view.ts";
import type { Item, ToolCall } from "./conversation_state.ts";

/** Seqs per block: a run is ~10 events and 4 messages, so ~25 messages a block. */
export const BLOCK_SEQS = 64;

/** One message as it renders: the item, its tool calls and the approval asked for each (same index). */
export interface MessageRow {
  item: Item;
  calls: ToolCall[];
  approvals: (ApprovalView | null)[];
}

export interface MessageBlock {
  /** Stable across prepends and appends: the seq range's number. */
  key: string;
  rows: MessageRow[];
}

/**
 * Group rows (ascending by seq) into blocks by seq range.
 * @param rows the conversation's messages in order
 */
export function messageBlocks(rows: readonly MessageRow[]): MessageBlock[] {
  const blocks: MessageBlock[] = [];
  for (const row of rows) {
    const key = `b${Math.floor(row.item.seq / BLOCK_SEQS)}`;
    const last = blocks.at(-1);
    if (last?.key === key) last.rows.push(row);
    else blocks.push({ key, rows: [row] });
  }
  return blocks;
}

/** Whether two rows render the same: the same item, and the same call and approval objects. */
export function sameRow(a: MessageRow, b: MessageRow): boolean {
  return a.item === b.item && sameRefs(a.calls, b.calls) && sameRefs(a.approvals, b.approvals);
}

/** Whether two blocks' rows all render the same. */
export function sameRows(a: readonly MessageRow[], b: readonly MessageRow[]): boolean {
  return a.length === b.length && a.every((r, i) => sameRow(r, b[i]));
}

function sameRefs<T>(a: readonly T[], b: readonly T[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}
