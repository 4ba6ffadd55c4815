/** Frames stay under the daemon's limit. */
import assert from "node:assert/strict";
import { encode } from "./encode.ts";
import { MAX_FRAME_BYTES } from "../../lib/wire.ts";

const ev = (seq: number, type: string) => ({
  v: 1,
  sessionId: "s",
  seq,
  ts: 0,
  type,
});

Deno.test("encode() shrinks strings, never the JSON, to stay under the frame limit", () => {
  const big = {
    ...ev(1, "tool_execution_end"),
    resultPreview: "é".repeat(600_000),
  };
  const text = encode(big);
  assert.ok(new TextEncoder().encode(text).length < MAX_FRAME_BYTES);
  assert.equal(JSON.parse(text).seq, 1);
});
