import assert from "node:assert/strict";
import { idleSessions, startIdleStop } from "./idle.ts";
import type { SessionSummary } from "../protocol.ts";
import { NotFoundError } from "../errors.ts";

const MIN = 60_000;

function row(id: string, extra: Partial<SessionSummary>): SessionSummary {
  return {
    id,
    name: null,
    cwd: "/workspace",
    model: null,
    provider: null,
    agent: true,
    repo: "g/p",
    startedAt: 0,
    state: "idle",
    lastSeq: 0,
    lastEventAt: null,
    online: true,
    ask: [],
    waiting: 0,
    title: id,
    activity: { state: "idle" },
    cost: 0,
    lastActivityAt: null,
    container: "running",
    ...extra,
  };
}

Deno.test("idle stop: only running workers with no run, no approval and no recent activity", async () => {
  const now = 100 * MIN;
  const sessions = [
    row("idle", { lastActivityAt: now - 31 * MIN }),
    row("recent", { lastActivityAt: now - 5 * MIN }),
    row("working", { lastActivityAt: now - 60 * MIN, state: "running" }),
    row("asking", { lastActivityAt: now - 60 * MIN, waiting: 1 }),
    row("stopped", { lastActivityAt: now - 60 * MIN, container: "stopped" }),
    row("terminal", { lastActivityAt: now - 60 * MIN, container: null }),
    row("resumed", { lastActivityAt: now - 60 * MIN }),
  ];
  const stops: string[] = [];
  const deps = {
    minutes: 30,
    sessions: { list: () => sessions },
    spawner: {
      container: (id: string) =>
        id === "resumed"
          ? {
            sessionId: id,
            repo: "g/p",
            state: "running" as const,
            exitCode: null,
            reason: null,
            logs: null,
            updatedAt: now - MIN,
          }
          : undefined,
      stopSession: (id: string) => (stops.push(id), Promise.resolve()),
    },
    now: () => now,
  };
  assert.deepEqual(idleSessions(deps), ["idle"]);
  assert.deepEqual(idleSessions({ ...deps, minutes: null }), []);
  const idle = startIdleStop(deps);
  try {
    assert.deepEqual(await idle.check(), ["idle"]);
    assert.deepEqual(stops, ["idle"]);
  } finally {
    idle.close();
  }
});

Deno.test("idle stop: a worker another replica stopped first is not a failure, nor counted", async () => {
  const now = 100 * MIN;
  const warned: string[] = [];
  const warn = console.warn;
  console.warn = (line: string) => warned.push(line);
  const idle = startIdleStop({
    minutes: 30,
    sessions: { list: () => [row("gone", { lastActivityAt: now - 31 * MIN }), row("broken", {})] },
    spawner: {
      container: () => undefined,
      stopSession: (id: string) =>
        Promise.reject(
          id === "gone" ? new NotFoundError(`Session "${id}" has no worker Pod`) : new Error("API down"),
        ),
    },
    now: () => now,
  });
  try {
    assert.deepEqual(await idle.check(), []);
    assert.equal(warned.length, 1, warned.join("\n"));
    assert.match(warned[0], /idle stop of broken failed: API down/);
  } finally {
    console.warn = warn;
    idle.close();
  }
});
