import assert from "node:assert/strict";
import type { Item, ToolCall } from "./conversation_state.ts";
import { BLOCK_SEQS, messageBlocks, type MessageRow, sameRow, sameRows } from "./message_blocks.ts";

function row(seq: number, calls: ToolCall[] = []): MessageRow {
  const item: Item = { kind: "system", key: `e${seq}`, seq, text: `m${seq}` };
  return { item, calls, approvals: calls.map(() => null) };
}

Deno.test("messageBlocks() groups consecutive messages by seq range, keys stable when older ones are added", () => {
  const rows = [BLOCK_SEQS + 1, BLOCK_SEQS + 5, 2 * BLOCK_SEQS, 3 * BLOCK_SEQS + 2].map((s) => row(s));
  const blocks = messageBlocks(rows);
  assert.deepEqual(blocks.map((b) => b.key), ["b1", "b2", "b3"]);
  assert.deepEqual(blocks.map((b) => b.rows.map((r) => r.item.seq)), [
    [BLOCK_SEQS + 1, BLOCK_SEQS + 5],
    [2 * BLOCK_SEQS],
    [3 * BLOCK_SEQS + 2],
  ]);
  // Older messages: a new block before, and the first block grows; the others are unchanged.
  const more = messageBlocks([row(3), row(BLOCK_SEQS), ...rows]);
  assert.deepEqual(more.map((b) => b.key), ["b0", "b1", "b2", "b3"]);
  assert.equal(more[1].rows.length, 3);
  assert.ok(sameRows(more[2].rows, blocks[1].rows) && sameRows(more[3].rows, blocks[2].rows));
  assert.ok(!sameRows(more[1].rows, blocks[0].rows));
  assert.deepEqual(messageBlocks([]), []);
});

Deno.test("sameRow() is identity of the item and of each call and approval", () => {
  const call = { id: "c" } as ToolCall;
  const a = row(1, [call]);
  assert.ok(sameRow(a, { ...a, calls: [call], approvals: [null] }), "new arrays, same objects");
  assert.ok(!sameRow(a, { ...a, calls: [{ ...call }] }), "a new call object");
  assert.ok(!sameRow(a, { ...a, calls: [] }));
  assert.ok(!sameRow(a, { ...a, item: { ...a.item } }), "a new item object");
  assert.ok(!sameRow(a, { ...a, approvals: [{ id: "x" } as never] }), "an approval asked");
});
