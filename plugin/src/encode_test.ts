/** Frames stay under the daemon's limit. */
import assert from "node:assert/strict";
import { encode, encodeBatch } from "./encode.ts";
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

Deno.test("encodeBatch() packs events under the frame limit, each as encode() would send it", () => {
  const events = Array.from(
    { length: 10 },
    (_, i) => ({ ...ev(i + 1, "tool_execution_end"), preview: "x".repeat(100_000) }),
  );
  const { text, count } = encodeBatch("s", (i) => events[i], 512);
  assert.ok(count >= 2 && count < 10, `${count} events in the first frame`);
  assert.ok(new TextEncoder().encode(text).length < MAX_FRAME_BYTES);
  const frame = JSON.parse(text);
  assert.equal(frame.type, "batch");
  assert.equal(frame.seq, 0);
  assert.deepEqual(frame.events.map((e: { seq: number }) => e.seq), events.slice(0, count).map((e) => e.seq));
  assert.equal(encodeBatch("s", (i) => events.slice(0, 3)[i], 2).count, 2, "at most maxEvents");
  const huge = { ...ev(1, "tool_execution_end"), preview: "x".repeat(300_000) };
  const one = encodeBatch("s", (i) => [huge, huge][i], 512);
  assert.equal(one.count, 1, "an event that fills a frame goes alone");
  assert.ok(new TextEncoder().encode(one.text).length < MAX_FRAME_BYTES);
});
