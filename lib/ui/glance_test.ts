import assert from "node:assert/strict";
import { applyGlance, EMPTY_GLANCE, firstLine, groupOf, sessionTitle, sortByGroup } from "./glance.ts";
import { readGlance } from "./glance_read.ts";
import type { SessionSummary, StoredEvent } from "../protocol.ts";
import type { UiEvent } from "./wire.ts";

const ev = (seq: number, type: string, payload: Record<string, unknown> = {}) =>
  ({ v: 1, sessionId: "s", seq, ts: seq, type, ...payload }) as unknown as UiEvent;
const msg = (role: string, text: string) => ({
  message: { role, id: `m${text.length}`, text, thinking: null, toolCalls: [], toolCallId: null },
});

function summary(over: Partial<SessionSummary>): SessionSummary {
  return {
    id: "s",
    name: null,
    cwd: "/home/dev/app",
    model: null,
    provider: null,
    agent: false,
    repo: null,
    startedAt: 0,
    online: true,
    state: "idle",
    lastSeq: 0,
    lastEventAt: null,
    ask: [],
    waiting: 0,
    ...over,
  } as SessionSummary;
}

Deno.test("sessionTitle() prefers pi's name, then the first prompt, then the cwd's folder", () => {
  assert.equal(sessionTitle(summary({ name: "named" }), "prompt"), "named");
  assert.equal(sessionTitle(summary({}), "prompt"), "prompt");
  assert.equal(sessionTitle(summary({ cwd: "/a/b/repo/" }), null), "repo");
  assert.equal(sessionTitle(summary({ cwd: "" }), null), "s");
  assert.equal(firstLine("\n  " + "word ".repeat(30) + "\nnext"), "word ".repeat(12).trimEnd() + "…");
});

Deno.test("applyGlance() tracks the running tool, the streamed line, the last line and the cost", () => {
  let g = applyGlance(EMPTY_GLANCE, [
    ev(1, "message_end", msg("user", "Fix it\nplease")),
    ev(2, "agent_start"),
  ]);
  assert.equal(g.firstPrompt, "Fix it");
  g = applyGlance(g, [ev(3, "tool_execution_start", { toolName: "bash", args: { command: "npm test\nx" } })]);
  assert.equal(g.activeTool, "bash npm test");
  g = applyGlance(g, [
    ev(4, "tool_execution_end", { toolName: "bash" }),
    ev(0, "message_update", { delta: "a\nb" }),
  ]);
  assert.equal(g.activeTool, null);
  assert.equal(g.streamLine, "a\nb");
  g = applyGlance(g, [
    ev(5, "message_end", msg("assistant", "one\ntwo\n")),
    ev(6, "agent_end", { usage: { totalCost: 0.5 } }),
  ]);
  assert.deepEqual([g.lastText, g.streamLine, g.cost, g.seq], ["two", null, 0.5, 6]);
  // A replayed seq changes nothing.
  assert.equal(applyGlance(g, [ev(6, "agent_end", { usage: { totalCost: 0.5 } })]).cost, 0.5);
});

Deno.test("readGlance() takes the first prompt from the head and the rest from the tail", () => {
  const all = [
    ev(1, "message_end", msg("user", "first")),
    ...Array.from({ length: 100 }, (_, i) => ev(i + 2, "agent_start")),
  ];
  all.push(ev(102, "message_end", msg("assistant", "last line")));
  const read = (_id: string, q: { after: number; before?: number; limit: number }) =>
    (q.before !== undefined
      ? all.filter((e) => e.seq < q.before!).slice(-q.limit)
      : all.filter((e) => e.seq > q.after).slice(0, q.limit)) as unknown as StoredEvent[];
  const g = readGlance(read, { id: "s", lastSeq: 102 });
  assert.deepEqual([g.firstPrompt, g.lastText, g.seq], ["first", "last line", 102]);
});

Deno.test("sortByGroup() puts needs-you, running, idle, offline in that order", () => {
  const list = [
    summary({ id: "off", online: false, lastEventAt: 9 }),
    summary({ id: "idle", lastEventAt: 8 }),
    summary({ id: "run", state: "running", lastEventAt: 1 }),
    summary({ id: "wait", waiting: 1, lastEventAt: 0 }),
  ];
  assert.deepEqual(sortByGroup(list).map((s) => s.id), ["wait", "run", "idle", "off"]);
  assert.equal(groupOf(summary({ online: false, waiting: 2 })), "needs-you");
});
