import assert from "node:assert/strict";
import { HIGH_WATER_BYTES, resumePoint, sseEvent, SseStream } from "./sse.ts";
import { InvalidError } from "./errors.ts";

const decoder = new TextDecoder();

/** Read until `pred` holds on everything read so far, or the stream ends. */
async function readUntil(reader: ReadableStreamDefaultReader<Uint8Array>, pred: (text: string) => boolean) {
  let text = "";
  while (!pred(text)) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value);
  }
  return text;
}

Deno.test("sseEvent() writes id, event and one data line per line", () => {
  assert.equal(
    sseEvent({ id: 7, event: "message_end", data: '{"a":1}' }),
    'id: 7\nevent: message_end\ndata: {"a":1}\n\n',
  );
  assert.equal(sseEvent({ data: "x\ny" }), "data: x\ndata: y\n\n");
});

Deno.test("resumePoint() prefers Last-Event-ID over ?after and refuses non-integers", () => {
  const url = new URL("http://h/s?after=3");
  assert.equal(resumePoint(new Request(url), url), 3);
  assert.equal(resumePoint(new Request(url, { headers: { "last-event-id": "9" } }), url), 9);
  const bare = new URL("http://h/s");
  assert.equal(resumePoint(new Request(bare), bare), null);
  for (const bad of ["-1", "1.5", "x", "1e400"]) {
    const u = new URL(`http://h/s?after=${bad}`);
    assert.throws(() => resumePoint(new Request(u), u), InvalidError, bad);
  }
});

Deno.test("SseStream pulls from its source only while the queue has room", async () => {
  let pulls = 0;
  const chunk = "x".repeat(10_000);
  const stream = new SseStream({
    pull(s) {
      pulls++;
      s.write(sseEvent({ data: chunk }));
    },
  });
  // Let the stream fill itself without anyone reading.
  await new Promise((r) => setTimeout(r, 0));
  const filled = stream.bufferedAmount();
  assert.ok(filled >= HIGH_WATER_BYTES, `queue filled to ${filled}`);
  assert.ok(filled < HIGH_WATER_BYTES + 2 * chunk.length, `queue bounded: ${filled}`);
  const before = pulls;
  const reader = stream.body.getReader();
  // The retry line and a couple of chunks: enough to drop below the high-water mark.
  for (let i = 0; i < 3; i++) await reader.read();
  await new Promise((r) => setTimeout(r, 0));
  assert.ok(pulls > before, "reading made room, so the source was asked again");
  await reader.cancel();
  assert.equal(stream.ended, true);
});

Deno.test("SseStream.abort() drops the queue and errors the body; end() runs once", async () => {
  let ends = 0;
  const stream = new SseStream({ end: () => ends++ });
  for (let i = 0; i < 100; i++) stream.write(sseEvent({ data: "y".repeat(10_000) }));
  assert.ok(stream.bufferedAmount() > 900_000);
  stream.abort("slow consumer");
  stream.close();
  assert.equal(stream.bufferedAmount(), 0);
  assert.equal(ends, 1);
  await assert.rejects(stream.body.getReader().read(), /slow consumer/);
});

Deno.test("SseStream.close() delivers what is queued, then ends; heartbeats are comment lines", async () => {
  const stream = new SseStream({}, { heartbeatMs: 10 });
  const reader = stream.body.getReader();
  const text = await readUntil(reader, (t) => t.includes(": keep-alive\n\n"));
  assert.match(text, /^retry: \d+\n\n/);
  stream.write(sseEvent({ id: 1, data: "last" }));
  stream.close();
  const rest = await readUntil(reader, () => false);
  assert.match(rest, /id: 1\ndata: last\n\n$/);
  assert.equal((await reader.read()).done, true);
});
