import assert from "node:assert/strict";
import type { SessionSummary } from "../lib/protocol.ts";
import { applySessionFrame, EMPTY_DIRECTORY } from "./session_directory.ts";

function row(id: string, extra: Partial<SessionSummary> = {}): SessionSummary {
  return {
    id,
    name: null,
    cwd: "/w",
    model: null,
    provider: null,
    agent: false,
    repo: null,
    startedAt: 1,
    online: true,
    state: "idle",
    lastSeq: 0,
    lastEventAt: null,
    ask: [],
    waiting: 0,
    title: id,
    activity: { state: "idle" },
    cost: 0,
    lastActivityAt: null,
    ...extra,
  };
}

Deno.test("applySessionFrame(): session_list replaces, session_update patches and removes", () => {
  const listed = applySessionFrame(EMPTY_DIRECTORY, { type: "session_list", sessions: [row("a"), row("b")] });
  assert.equal(listed.loaded, true);
  assert.equal(listed.changed, null);
  assert.deepEqual([...listed.byId.keys()], ["a", "b"]);

  const updated = applySessionFrame(listed, {
    type: "session_update",
    sessions: [row("b", { state: "running" }), row("c")],
    removed: ["a", "unknown"],
  });
  assert.deepEqual([...updated.byId.keys()].sort(), ["b", "c"]);
  assert.equal(updated.byId.get("b")?.state, "running");
  assert.deepEqual(updated.changed, ["b", "c"]);
  assert.deepEqual(updated.removed, ["a"], "only ids it held count as removed");
  assert.equal(listed.byId.size, 2, "the previous snapshot is not mutated");

  const again = applySessionFrame(updated, { type: "session_list", sessions: [row("c")] });
  assert.deepEqual([...again.byId.keys()], ["c"]);
  assert.deepEqual(again.removed, ["b"]);
});

Deno.test("applySessionFrame(): a delta before any list leaves the directory not loaded", () => {
  const d = applySessionFrame(EMPTY_DIRECTORY, { type: "session_update", sessions: [row("x")], removed: [] });
  assert.equal(d.loaded, false);
  assert.equal(d.byId.get("x")?.id, "x");
});
