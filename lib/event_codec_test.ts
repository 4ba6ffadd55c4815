/**
 * An event's encoding cut from the frame it came in must be what encoding it gives, and a frame laid out in any
 * other way must be left to encoding.
 */
import assert from "node:assert/strict";
import { cutFrom, encodedEvent, eventJson, payloadOf } from "./event_codec.ts";
import { type AgentEvent, parsePluginFrame } from "./protocol.ts";

const env = { v: 1, sessionId: "s-1.a_b", seq: 42, ts: 1_700_000_000_123 };
const msg = {
  role: "assistant",
  id: "m1",
  text: 'say "hi" \\ ü 😀 \u2028',
  thinking: null,
  toolCalls: [],
  toolCallId: null,
};
const events: Record<string, unknown>[] = [
  { ...env, type: "message_end", message: msg },
  { ...env, type: "message_end", message: msg, extra: { "1": [1.5, -2e-7, null], z: "" } },
  { ...env, type: "message_update", delta: "tok", sentAt: 1.25 },
  { ...env, type: "tool_execution_update", toolCallId: "c", toolName: "bash", partial: "out\n" },
];

/** What encoding gives: the payload alone, then the envelope put before it. */
function encoded(event: AgentEvent) {
  const payload = payloadOf(event);
  const ts = Math.trunc(event.ts);
  return {
    payload,
    json: eventJson({ sessionId: event.sessionId, seq: event.seq, ts, type: event.type, payload }),
  };
}

Deno.test("cutFrom(): an event alone in its frame is its own JSON, and its payload is what encoding gives", () => {
  for (const e of events) {
    const text = JSON.stringify(e);
    const parsed = parsePluginFrame(text);
    assert.ok(parsed.ok && parsed.eventsAt, text);
    const event = parsed.value as AgentEvent;
    const cut = cutFrom(event, text, parsed.eventsAt[0], parsed.eventsAt[1]);
    assert.deepEqual(cut, encoded(event));
    assert.equal(cut!.json, text);
    assert.equal(encodedEvent(event, cut).json, text);
  }
});

Deno.test("cutFrom(): each event of a batch is cut at its own place", () => {
  const texts = events.map((e, i) => JSON.stringify({ ...e, seq: i + 1 }));
  const text = `{"v":1,"type":"batch","sessionId":"s-1.a_b","seq":0,"ts":1,"events":[${texts.join(",")}]}`;
  const parsed = parsePluginFrame(text);
  assert.ok(parsed.ok && parsed.value.type === "batch" && parsed.eventsAt);
  assert.equal(parsed.eventsAt.length, 2 * events.length);
  parsed.value.events.forEach((raw, i) => {
    const cut = cutFrom(raw as AgentEvent, text, parsed.eventsAt![2 * i], parsed.eventsAt![2 * i + 1]);
    assert.equal(cut?.json, texts[i]);
    assert.deepEqual(cut, encoded(raw as AgentEvent));
  });
});

Deno.test("cutFrom(): a payload-less event is cut as {}", () => {
  const text = '{"v":1,"sessionId":"s","seq":1,"ts":5,"type":"agent_start"}';
  assert.deepEqual(cutFrom(JSON.parse(text), text, 0, text.length), { payload: "{}", json: text });
});

Deno.test("cutFrom(): a text laid out otherwise than encoding lays it out is left to encoding", () => {
  const texts = [
    '{"v":1,"sessionId":"s","seq":1,"ts":5.5,"type":"message_update","delta":"x"}', // stored truncated
    '{"v":1,"sessionId":"\\u0073","seq":1,"ts":5,"type":"message_update","delta":"x"}', // escaped
    '{"v":1,"sessionId":"s","seq":1e0,"ts":5,"type":"message_update","delta":"x"}', // not plain digits
    '{"v":1,"sessionId":"s","ts":5,"seq":1,"type":"message_update","delta":"x"}', // out of order
    '{"sessionId":"s","v":1,"seq":1,"ts":5,"type":"message_update","delta":"x"}',
    '{"v":1,"sessionId":"s","seq":1,"ts":5,"type":"message_\\u0075pdate","delta":"x"}',
  ];
  for (const text of texts) assert.equal(cutFrom(JSON.parse(text), text, 0, text.length), undefined, text);
});

Deno.test("parsePluginFrame(): says where events sit only in a compact frame taken as parsed", () => {
  const ev = (seq: number) => JSON.stringify({ ...events[2], seq });
  const batch = (inner: string) =>
    `{"v":1,"type":"batch","sessionId":"s-1.a_b","seq":0,"ts":1,"events":[${inner}]}`;
  const at = (text: string) => {
    const parsed = parsePluginFrame(text);
    assert.ok(parsed.ok, text);
    return parsed.eventsAt;
  };
  assert.deepEqual(at(ev(1)), [0, ev(1).length]);
  assert.equal(at(batch(`${ev(1)},${ev(2)}`))?.length, 4);
  assert.equal(at(batch(`${ev(1)}, ${ev(2)}`)), undefined, "whitespace between the events");
  assert.equal(at(JSON.stringify(JSON.parse(ev(1)), null, 1)), undefined, "whitespace in the event");
  assert.equal(
    at(batch(ev(1)).replace('"seq":0', '"x":[{}],"seq":0')),
    undefined,
    "another member holds objects",
  );
  // Through the schema (a default filled in): the value is not the parsed text.
  assert.equal(
    at(JSON.stringify({ ...env, type: "message_end", message: { role: "assistant", id: "m" } })),
    undefined,
  );
});
