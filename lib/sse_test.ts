import assert from "node:assert/strict";
import { HEARTBEAT_MS, HIGH_WATER_BYTES, resumePoint, sseEvent, SseStream, STALLED_BEATS } from "./sse.ts";
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
  assert.equal(HEARTBEAT_MS, 15_000, "a comment line every 15 s, as README.md says");
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

/** Wait until `pred` holds, polling every few ms, for at most `ms`. */
async function until(pred: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!pred() && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
  return pred();
}

Deno.test("SseStream cuts off a reader that takes nothing for STALLED_BEATS heartbeats, not a slow one", async () => {
  const beat = 20;
  const stalled = new SseStream({}, { heartbeatMs: beat });
  const slow = new SseStream({}, { heartbeatMs: beat });
  for (const s of [stalled, slow]) {
    for (let i = 0; i < 20; i++) s.write(sseEvent({ data: "q".repeat(10_000) }));
  }
  const reader = slow.body.getReader();
  // The slow reader takes one chunk per heartbeat or so: progress, however little, keeps it.
  let reading = true;
  const pace = (async () => {
    while (reading && !slow.ended) {
      await reader.read();
      await new Promise((r) => setTimeout(r, beat));
    }
  })();
  const started = Date.now();
  assert.ok(await until(() => stalled.ended, 50 * beat), "the stalled stream was cut off");
  const took = Date.now() - started;
  assert.ok(took >= (STALLED_BEATS - 1) * beat, `not before ${STALLED_BEATS} heartbeats (${took} ms)`);
  await assert.rejects(stalled.body.getReader().read(), /slow consumer/);
  assert.equal(slow.ended, false, "the slow but reading stream is kept");
  reading = false;
  await pace;
  await reader.cancel();
});
