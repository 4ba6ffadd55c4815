import assert from "node:assert/strict";
import { activityText, firstLine, firstPrompt, groupOf, sessionTitle, sortByGroup } from "./glance.ts";
import type { SessionSummary } from "../lib/protocol.ts";
import type { UiEvent } from "./types.ts";

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
    title: "s",
    activity: { state: "idle" },
    cost: 0,
    lastActivityAt: null,
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

Deno.test("firstPrompt() is the first user prompt's first line", () => {
  assert.equal(
    firstPrompt([
      ev(1, "message_end", msg("assistant", "hi")),
      ev(2, "message_end", msg("user", "\nFix it\nplease")),
    ]),
    "Fix it",
  );
  assert.equal(firstPrompt([ev(1, "agent_start")]), null);
});

Deno.test("activityText() words each state, with the tool before the line while running", () => {
  assert.equal(activityText({ state: "waiting", tool: "bash rm x" }), "waiting for approval: bash rm x");
  assert.equal(
    activityText({ state: "running", tool: "bash npm test", line: "ok" }),
    "running: bash npm test",
  );
  assert.equal(activityText({ state: "running", line: "Now the list" }), "running: Now the list");
  assert.equal(activityText({ state: "running" }), "running");
  assert.equal(activityText({ state: "idle", line: "Done." }), "idle: Done.");
  assert.equal(activityText({ state: "offline" }), "offline");
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

Deno.test("groupOf() puts stopped and crashed spawned sessions apart, after idle and before offline", () => {
  const list = [
    summary({ id: "off", online: false, lastEventAt: 9 }),
    summary({ id: "crashed", online: false, container: "crashed", lastEventAt: 1 }),
    summary({ id: "stopped", online: false, container: "stopped", lastEventAt: 2 }),
    summary({ id: "idle", container: "running", lastEventAt: 0 }),
  ];
  assert.deepEqual(sortByGroup(list).map((s) => s.id), ["idle", "stopped", "crashed", "off"]);
  assert.equal(groupOf(summary({ online: false, container: "stopped", waiting: 1 })), "needs-you");
  assert.equal(groupOf(summary({ online: false, container: null })), "offline");
});
