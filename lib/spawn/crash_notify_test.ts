import assert from "node:assert/strict";
import { Hub } from "../hub.ts";
import type { SessionSummary } from "../protocol.ts";
import type { NotifyEvent } from "../notify/kinds.ts";
import { describe } from "../notify/kinds.ts";
import { Watcher } from "../notify/watcher.ts";

function row(id: string, extra: Partial<SessionSummary> = {}): SessionSummary {
  return {
    id,
    name: `name ${id}`,
    cwd: "/workspace",
    model: null,
    provider: null,
    agent: true,
    repo: "g/p",
    startedAt: 0,
    state: "idle",
    lastSeq: 0,
    lastEventAt: null,
    online: false,
    ask: [],
    waiting: 0,
    title: `name ${id}`,
    activity: { state: "offline" },
    cost: 0,
    lastActivityAt: null,
    container: "running",
    ...extra,
  };
}

Deno.test("a session whose worker crashed is announced once as session.crashed, with its reason", () => {
  const hub = new Hub();
  const got: NotifyEvent[] = [];
  const watcher = new Watcher(hub, (e) => got.push(e), { stallMs: 60_000, checkEveryMs: 3_600_000 });
  try {
    watcher.prime([], []);
    const update = (s: SessionSummary) =>
      hub.broadcast({ type: "session_update", sessions: [s], removed: [] });
    update(row("a"));
    update(row("a", { container: "crashed", exitCode: 137, reason: "oom" }));
    update(row("a", { container: "crashed", exitCode: 137, reason: "oom", lastActivityAt: 5 }));
    update(row("a", { container: "stopped" }));
    const crashed = got.filter((e) => e.type === "session.crashed");
    assert.equal(crashed.length, 1);
    assert.deepEqual([crashed[0].data.exitCode, crashed[0].data.reason], [137, "oom"]);
    assert.match(describe(crashed[0]).body, /oom/);
  } finally {
    watcher.close();
  }
});
