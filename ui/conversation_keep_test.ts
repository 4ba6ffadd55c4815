import assert from "node:assert/strict";
import type { UiEvent } from "./types.ts";
import { buildConversation, mergeEvents, prependEvents } from "./conversation.ts";
import { keepUnchanged } from "./conversation_keep.ts";

/** An event as the daemon serves it (payloads written loosely, as in conversation_test.ts). */
function ev(seq: number, type: string, payload: Record<string, unknown> = {}): UiEvent {
  return { sessionId: "s1", seq, ts: 1000 + seq, type, ...payload } as unknown as UiEvent;
}
function msg(seq: number, role: string, text: string, extra: Record<string, unknown> = {}) {
  return ev(seq, "message_end", {
    message: { role, id: `m${seq}`, text, thinking: null, toolCalls: [], toolCallId: null, ...extra },
  });
}
/** One run of ten events from `s`: prompt, a call to bash with its result, an answer, usage. */
function run(s: number): UiEvent[] {
  const call = `c${s}`;
  return [
    ev(s, "agent_start"),
    msg(s + 1, "user", `prompt ${s}`, { images: [{ sha256: `h${s}`, mimeType: "image/png", bytes: 3 }] }),
    msg(s + 2, "assistant", "Let me look.", { toolCalls: [{ id: call, name: "bash", argsJson: "{}" }] }),
    ev(s + 3, "tool_execution_start", { toolCallId: call, toolName: "bash", args: {} }),
    ev(s + 4, "tool_execution_update", { toolCallId: call, toolName: "bash", partial: "…" }),
    ev(s + 5, "tool_execution_end", {
      toolCallId: call,
      toolName: "bash",
      isError: false,
      resultPreview: "ok",
      details: { exit: 0 },
    }),
    msg(s + 6, "toolResult", "ok", { toolCallId: call }),
    msg(s + 7, "assistant", `done ${s}`),
    ev(s + 8, "agent_end", { usage: { inputTokens: 1, outputTokens: 2, totalCost: 0.5 } }),
    ev(s + 9, "agent_settled"),
  ];
}
const events = [...run(1), ...run(11), ...run(21)];

Deno.test("prependEvents() keeps the items and tool calls an older page does not change as the same objects", () => {
  const newer = buildConversation(events.slice(10));
  const c = prependEvents(newer, events.slice(0, 10));
  // What a rebuild from every event gives, in content.
  assert.deepEqual(c.items, buildConversation(events).items);
  assert.deepEqual(c.tools, buildConversation(events).tools);
  // The newer runs' messages and calls are the objects already rendered; the older run's are new.
  assert.deepEqual(c.items.slice(4), newer.items);
  c.items.slice(4).forEach((item, i) => assert.equal(item, newer.items[i], `item ${item.key}`));
  assert.equal(c.tools.c11, newer.tools.c11);
  assert.equal(c.tools.c21, newer.tools.c21);
  assert.ok(c.tools.c1 && !newer.tools.c1);
});

Deno.test("prependEvents() renews what a page boundary inside a run changes, and only that", () => {
  // The latest page starts after run 11's assistant message: its call's events and result stand alone.
  const newer = buildConversation(events.slice(13));
  assert.equal(newer.tools.c11.inMessage, false);
  assert.ok(newer.items.some((i) => i.kind === "toolResult" && i.toolCallId === "c11"), "result shown alone");
  const c = prependEvents(newer, events.slice(0, 13));
  assert.deepEqual(c.items, buildConversation(events).items);
  // The call now belongs to its message (a new object); its stand-alone result is gone.
  assert.notEqual(c.tools.c11, newer.tools.c11);
  assert.equal(c.tools.c11.inMessage, true);
  assert.ok(!c.items.some((i) => i.kind === "toolResult"));
  // Run 11's closing answer and everything of run 21 are unchanged objects.
  const kept = c.items.filter((i) => newer.items.includes(i)).map((i) => i.key);
  assert.deepEqual(kept, ["e18", "e19", "e22", "e23", "e28", "e29"]);
  assert.equal(c.tools.c21, newer.tools.c21);
});

Deno.test("mergeEvents() filling a gap keeps the messages and calls around it", () => {
  const held = mergeEvents(buildConversation(events.slice(0, 10)), events.slice(20));
  const c = mergeEvents(held, events.slice(10, 20));
  assert.deepEqual(c.items, buildConversation(events).items);
  for (const item of held.items) assert.ok(c.items.includes(item), `kept ${item.key}`);
  assert.equal(c.tools.c1, held.tools.c1);
  assert.equal(c.tools.c21, held.tools.c21);
});

Deno.test("keepUnchanged() compares content: any changed field, nested or not, gives the new object", () => {
  const a = buildConversation(events.slice(0, 10));
  const same = buildConversation(events.slice(0, 10));
  const kept = keepUnchanged(a, same);
  kept.items.forEach((item, i) => assert.equal(item, a.items[i]));
  assert.equal(kept.tools.c1, a.tools.c1);
  // A different image list, a different details object, a different text: each is a new object.
  const user = same.items[0];
  assert.equal(user.kind, "user");
  if (user.kind !== "user") return;
  const changed = {
    ...same,
    items: [{ ...user, images: [{ ...user.images[0], bytes: 4 }] }, ...same.items.slice(1, 3), {
      ...same.items[3],
      seq: 99,
    }],
    tools: { c1: { ...same.tools.c1, details: { exit: 1 } } },
  };
  const out = keepUnchanged(a, changed);
  assert.equal(out.items[0], changed.items[0]);
  assert.equal(out.items[1], a.items[1]);
  assert.equal(out.items[3], changed.items[3]);
  assert.equal(out.tools.c1, changed.tools.c1);
  assert.equal(
    keepUnchanged(a, { ...same, tools: { c1: { ...same.tools.c1, details: { exit: 0 } } } }).tools.c1,
    a.tools.c1,
  );
});
