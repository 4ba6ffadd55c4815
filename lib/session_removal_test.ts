import assert from "node:assert/strict";
import { Store } from "./store.ts";
import { Hub } from "./hub.ts";
import { Ingest } from "./ingest.ts";
import { LiveSessions, type PluginLink } from "./live_sessions.ts";
import type { AgentEvent, SessionInfo } from "./protocol.ts";
import { deleteSession, pruneSessions } from "./session_removal.ts";
import { sessionInfo } from "../tests/_agent_client.ts";

const DAY = 24 * 60 * 60 * 1000;
const NOW = Date.UTC(2026, 10, 30);
const info = (id: string, startedAt: number) => sessionInfo(id, { startedAt }) as SessionInfo;
const ev = (sessionId: string, seq: number, ts: number) =>
  ({ v: 1, sessionId, seq, ts, type: "agent_start" }) as AgentEvent;
const link: PluginLink = { send() {}, close() {} };

async function withParts(fn: (parts: Parameters<typeof deleteSession>[0], changes: () => number) => void) {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-removal-" });
  const store = new Store(`${dir}/lvmh.db`);
  let changes = 0;
  const parts = {
    store,
    ingest: new Ingest(store, new Hub()),
    live: new LiveSessions((id) => store.getSession(id) !== null),
    onSessionsChanged: () => void changes++,
  };
  try {
    fn(parts, () => changes);
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("pruneSessions() deletes offline sessions idle past the period, by last event or start", () =>
  withParts((parts, changes) => {
    const { store } = parts;
    store.upsertSession(info("old", NOW - 40 * DAY), false);
    store.upsertSession(info("recent", NOW - 40 * DAY), false);
    store.upsertSession(info("never-ran", NOW - 31 * DAY), false);
    store.upsertSession(info("new", NOW - DAY), false);
    store.upsertSession(info("old-online", NOW - 40 * DAY), true);
    parts.live.attach("old-online", link);
    store.appendBatch([
      ev("old", 1, NOW - 35 * DAY),
      ev("recent", 1, NOW - 2 * DAY),
      ev("old-online", 1, NOW - 35 * DAY),
    ]);

    assert.deepEqual(pruneSessions(parts, 30, NOW).sort(), ["never-ran", "old"]);
    assert.deepEqual(store.listSessions().map((s) => s.id).sort(), ["new", "old-online", "recent"]);
    assert.deepEqual(store.events("old", { after: 0, limit: 10 }), []);
    assert.equal(changes(), 2, "browsers told of each removal");
    assert.deepEqual(pruneSessions(parts, 30, NOW), [], "nothing left to prune");
  }));

Deno.test("deleteSession() leaves an online session alone and reports an unknown one", () =>
  withParts((parts) => {
    parts.store.upsertSession(info("live", NOW), true);
    parts.live.attach("live", link);
    assert.equal(deleteSession(parts, "live"), "online");
    assert.equal(deleteSession(parts, "ghost"), "missing");
    parts.live.detach("live", link);
    assert.equal(deleteSession(parts, "live"), "deleted");
  }));
