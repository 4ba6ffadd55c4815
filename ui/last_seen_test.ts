import assert from "node:assert/strict";
import { readLastSeen, summariseSince, writeLastSeen } from "./last_seen.ts";
import type { UiEvent } from "./types.ts";

const ev = (seq: number, type: string, payload: Record<string, unknown> = {}) =>
  ({ v: 1, sessionId: "s", seq, ts: seq, type, ...payload }) as unknown as UiEvent;

Deno.test("writeLastSeen() never moves back; readLastSeen() is null for a session never shown", () => {
  const m = new Map<string, string>();
  const s = {
    getItem: (k: string) => m.get(k) ?? null,
    setItem: (k: string, v: string) => void m.set(k, v),
    removeItem: (k: string) => void m.delete(k),
  };
  assert.equal(readLastSeen("a", s), null);
  writeLastSeen("a", 7, s);
  writeLastSeen("a", 3, s);
  assert.equal(readLastSeen("a", s), 7);
});

Deno.test("summariseSince() counts runs, tools, files touched and cost after the seq only", () => {
  const events = [
    ev(1, "agent_end", { usage: { totalCost: 9 } }),
    ev(2, "tool_execution_start", { toolName: "edit", args: { path: "a.ts" } }),
    ev(3, "tool_execution_start", { toolName: "write", args: { file_path: "b.md" } }),
    ev(4, "tool_execution_start", { toolName: "edit", args: { path: "a.ts" } }),
    ev(5, "tool_execution_start", { toolName: "bash", args: { command: "ls" } }),
    ev(6, "agent_end", { usage: { totalCost: 0.25 } }),
  ];
  assert.deepEqual(summariseSince(events, 1), {
    runs: 1,
    tools: 4,
    files: ["a.ts", "b.md"],
    cost: 0.25,
    events: 5,
  });
  assert.equal(summariseSince(events, 6).events, 0);
});
