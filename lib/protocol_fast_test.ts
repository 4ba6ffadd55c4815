/** The hot-shape fast path of lib/protocol.ts must accept exactly what the schema accepts, with zod's result. */
import assert from "node:assert/strict";
import {
  AgentEvent,
  nestsDeeper,
  parseAgentEvent,
  parseBrowserFrame,
  parsePluginFrame,
  PluginFrame,
} from "./protocol.ts";

const env = { v: 1, sessionId: "s-1", seq: 3, ts: 1_700_000_000_123 };
const msg = { role: "assistant", id: "m1", text: "hi", thinking: null, toolCalls: [], toolCallId: null };
const valid: Record<string, unknown>[] = [
  { ...env, type: "message_update", delta: "tok" },
  { ...env, type: "message_update", delta: "", kind: "thinking", sentAt: 1.5 },
  { ...env, type: "message_end", message: msg },
  {
    ...env,
    type: "message_end",
    message: { ...msg, toolCalls: [{ id: "c", name: "bash", argsJson: "{}", extra: 1 }], stopReason: "stop" },
    extra: { kept: true },
  },
  { ...env, type: "tool_execution_update", toolCallId: "c", toolName: "bash", partial: "out" },
  { ...env, type: "agent_start" },
  { ...env, type: "agent_settled", extra: 1 },
  { ...env, type: "agent_end", usage: {} },
  {
    ...env,
    type: "agent_end",
    usage: { inputTokens: 5000, outputTokens: 0, totalCost: 0.007, cacheRead: 9 },
  },
  { ...env, type: "message_start", message: { role: "assistant", id: "a1" } },
  { ...env, type: "message_start", message: { role: "assistant", id: "a1", text: "" }, extra: [1] },
];
// Each would take the fast path were it not for one field; the schema decides (defaults, errors).
const fallThrough: Record<string, unknown>[] = [
  { ...env, type: "message_update", delta: 5 },
  { ...env, type: "message_update", delta: "x", kind: "other" },
  { ...env, type: "message_update", delta: "x", seq: -1 },
  { ...env, type: "message_update", delta: "x", seq: 1.5 },
  { ...env, type: "message_update", delta: "x", sessionId: "bad id" },
  { ...env, type: "message_update", delta: "x", sessionId: "x".repeat(129) },
  { ...env, type: "message_update", delta: "x", ts: "now" },
  { ...env, type: "message_end", message: { role: "assistant", id: "m" } }, // defaults to fill in
  { ...env, type: "message_end", message: { ...msg, role: "robot" } },
  { ...env, type: "message_end", message: { ...msg, id: "x".repeat(201) } },
  { ...env, type: "message_end", message: { ...msg, toolCalls: [{ id: "c", name: "bash" }] } },
  { ...env, type: "message_end", message: msg, from: { promptId: "p", by: "ann" } },
  { ...env, type: "tool_execution_update", toolCallId: "c", toolName: "bash" },
  { ...env, type: "agent_start", seq: -2 },
  { ...env, type: "agent_end" }, // usage defaults to {}
  { ...env, type: "agent_end", usage: null },
  { ...env, type: "agent_end", usage: { totalCost: -1 } },
  { ...env, type: "agent_end", usage: { inputTokens: "5" } },
  { ...env, type: "agent_end", usage: { outputTokens: Infinity } },
  { ...env, type: "message_start", message: { role: "assistant" } },
  { ...env, type: "message_start", message: { role: "r".repeat(51), id: "a1" } },
  { ...env, type: "message_start", message: { role: "assistant", id: "x".repeat(201) } },
  { ...env, type: "message_start", message: { role: "assistant", id: "a1" }, from: { by: "ann" } },
];
// Frames that are neither events nor batches: the plugin's heartbeat.
const ping = { ...env, type: "ping", seq: 0 };
const frames: Record<string, unknown>[] = [ping, { ...ping, extra: true }, { ...ping, seq: 1 }, {
  ...ping,
  ts: "now",
}];

Deno.test("parseAgentEvent(): the fast path gives zod's result for the hot shapes", () => {
  for (const input of [...valid, ...fallThrough]) {
    const zod = AgentEvent.safeParse(structuredClone(input));
    const fast = parseAgentEvent(structuredClone(input));
    assert.equal(fast.ok, zod.success, JSON.stringify(input));
    if (fast.ok && zod.success) assert.deepEqual(fast.value, zod.data);
  }
  for (const input of valid) {
    const r = parseAgentEvent(input);
    assert.ok(r.ok && r.value === input, "a hot shape is used as it is, not copied");
  }
});

Deno.test("parsePluginFrame(): fast-path frames and batches equal the schema's parse, errors keep their wording", () => {
  const batch = { v: 1, type: "batch", sessionId: "s-1", seq: 0, ts: 1, events: valid };
  for (
    const input of [...valid, ...fallThrough, ...frames, batch, { ...batch, seq: 1 }, {
      ...batch,
      events: [],
    }]
  ) {
    const text = JSON.stringify(input);
    const fast = parsePluginFrame(text);
    const zod = PluginFrame.safeParse(JSON.parse(text));
    assert.equal(fast.ok, zod.success, text);
    if (fast.ok && zod.success) assert.deepEqual(fast.value, zod.data);
  }
  const heartbeat = parsePluginFrame(JSON.stringify(ping));
  assert.ok(heartbeat.ok && heartbeat.eventsAt === undefined, "a ping has no events to cut");
  const bad = parsePluginFrame(JSON.stringify({ ...env, type: "message_update", delta: 5 }));
  assert.ok(!bad.ok && bad.code === "bad_frame" && /delta/.test(bad.message), JSON.stringify(bad));
});

Deno.test("nestsDeeper(): counts brackets outside strings only, escapes included", () => {
  assert.equal(nestsDeeper("[".repeat(64) + "]".repeat(64)), false);
  assert.equal(nestsDeeper("[".repeat(65) + "]".repeat(65)), true);
  assert.equal(nestsDeeper('{"a":'.repeat(65) + "1" + "}".repeat(65)), true);
  assert.equal(nestsDeeper(JSON.stringify({ s: "[".repeat(1000) })), false, "brackets in a string");
  assert.equal(
    nestsDeeper(JSON.stringify({ s: '\\"' + "[".repeat(100) })),
    false,
    "escaped quote, then brackets",
  );
  assert.equal(
    nestsDeeper(JSON.stringify({ s: "\\\\" }) + "[".repeat(70)),
    true,
    "an escaped backslash ends",
  );
  assert.equal(nestsDeeper('"unterminated [[[['), false);
  // A sibling closes before the next opens: breadth is not depth.
  assert.equal(nestsDeeper("[" + "[],".repeat(1000) + "[]]"), false);
});

Deno.test("parsePluginFrame() and parseBrowserFrame() refuse a 10,000-deep frame before parsing it", () => {
  const deep = "[".repeat(10_000) + "]".repeat(10_000);
  for (const r of [parsePluginFrame(deep), parseBrowserFrame(deep)]) {
    assert.ok(!r.ok && r.code === "bad_frame" && /deeper than 64/.test(r.message), JSON.stringify(r));
  }
  const t0 = performance.now();
  for (let i = 0; i < 100; i++) parsePluginFrame(deep);
  assert.ok(performance.now() - t0 < 100, "no parse: about 20 µs each, where JSON.parse took ~540 µs");
});
