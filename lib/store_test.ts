import assert from "node:assert/strict";
import { Store } from "./store.ts";
import type { AgentEvent, SessionInfo } from "./protocol.ts";
import { sessionInfo } from "../testing/agent.ts";

const info = (id: string) => sessionInfo(id, { name: null }) as SessionInfo;
const ev = (sessionId: string, seq: number, type = "agent_start", extra = {}) =>
  ({ v: 1, sessionId, seq, ts: 1000 + seq, type, ...extra }) as AgentEvent;

async function withStore(fn: (store: Store, path: string) => void | Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-store-" });
  const store = new Store(`${dir}/lvmh.db`);
  try {
    await fn(store, `${dir}/lvmh.db`);
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("store.appendBatch() ignores a replayed seq and reports only new rows", () =>
  withStore((store) => {
    store.upsertSession(info("a"));
    const first = store.appendBatch([ev("a", 1), ev("a", 2, "agent_end", { usage: {} })]);
    assert.equal(first[0].after, 0);
    assert.equal(first[0].lastSeq, 2);
    assert.deepEqual(first[0].inserted.map((e) => e.seq), [1, 2]);
    const replay = store.appendBatch([ev("a", 2, "agent_start"), ev("a", 3)]);
    assert.deepEqual(replay[0].inserted.map((e) => e.seq), [3]);
    assert.equal(replay[0].after, 2);
    assert.deepEqual(store.events("a", { after: 0, limit: 10 }).map((e) => [e.seq, e.type]), [
      [1, "agent_start"],
      [2, "agent_end"],
      [3, "agent_start"],
    ]);
  }));

Deno.test("store.appendBatch() keeps unknown payload fields and rebuilds the envelope", () =>
  withStore((store) => {
    store.upsertSession(info("a"));
    store.appendBatch([
      ev("a", 1, "tool_execution_start", { toolCallId: "c", toolName: "t", args: { x: 1 }, extra: "kept" }),
    ]);
    const [e] = store.events("a", { after: 0, limit: 1 });
    assert.deepEqual(e, {
      v: 1,
      sessionId: "a",
      seq: 1,
      ts: 1001,
      type: "tool_execution_start",
      toolCallId: "c",
      toolName: "t",
      args: { x: 1 },
      extra: "kept",
    });
  }));

Deno.test("store.appendBatch() rolls back the whole batch on failure", () =>
  withStore((store) => {
    store.upsertSession(info("a"));
    assert.throws(() => store.appendBatch([ev("a", 1), ev("ghost", 1)]), /unknown session "ghost"/);
    assert.equal(store.lastSeq("a"), 0);
    assert.deepEqual(store.events("a", { after: 0, limit: 10 }), []);
  }));

Deno.test("store tracks running state, session_info and lastEventAt", () =>
  withStore((store) => {
    store.upsertSession(info("a"));
    store.appendBatch([ev("a", 1, "agent_start")]);
    assert.equal(store.getSession("a")!.state, "running");
    store.appendBatch([ev("a", 2, "session_info", { session: { ...info("a"), name: "new name" } })]);
    const s = store.getSession("a")!;
    assert.equal(s.name, "new name");
    assert.equal(s.lastEventAt, 1002);
    store.setIdle("a");
    assert.equal(store.getSession("a")!.state, "idle", "an offline session is not running");
  }));

Deno.test("store pages events with after, before and limit", () =>
  withStore((store) => {
    store.upsertSession(info("a"));
    store.appendBatch(Array.from({ length: 50 }, (_, i) => ev("a", i + 1)));
    assert.deepEqual(store.events("a", { after: 10, limit: 3 }).map((e) => e.seq), [11, 12, 13]);
    assert.deepEqual(store.events("a", { after: 0, before: 10, limit: 3 }).map((e) => e.seq), [7, 8, 9]);
    assert.deepEqual(store.events("a", { after: 48, limit: 10 }).map((e) => e.seq), [49, 50]);
  }));

Deno.test("store reopens with every session idle and its data intact", async () => {
  await withStore((store, path) => {
    store.upsertSession(info("a"));
    store.appendBatch([ev("a", 1)]);
    store.upsertSession(info("a"), { keepSnapshot: true, ask: ["bash"] });
    store.setSetting("k", "v");
    store.close();
    const again = new Store(path);
    try {
      assert.equal(again.getSession("a")!.state, "idle");
      assert.equal(again.lastSeq("a"), 1);
      assert.deepEqual(again.askOf("a"), ["bash"], "a session's ask set survives a restart");
      assert.equal(again.getSetting("k"), "v");
      again.deleteSetting("k");
      assert.equal(again.getSetting("k"), null);
    } finally {
      again.close();
    }
  });
});

Deno.test("store.listSessions() sorts by last activity", () =>
  withStore((store) => {
    for (const id of ["old", "new", "never"]) store.upsertSession(info(id));
    store.appendBatch([ev("old", 1)]);
    store.appendBatch([{ ...ev("new", 1), ts: 9999 }]);
    assert.deepEqual(store.listSessions().map((s) => s.id), ["new", "old", "never"]);
  }));

Deno.test("store.deleteSession() removes the session and its events, and nothing of others", () =>
  withStore((store) => {
    store.upsertSession(info("a"));
    store.upsertSession(info("b"));
    store.appendBatch([ev("a", 1), ev("a", 2), ev("b", 1)]);
    assert.equal(store.deleteSession("a"), true);
    assert.equal(store.getSession("a"), null);
    assert.equal(store.lastSeq("a"), 0);
    assert.deepEqual(store.events("a", { after: 0, limit: 10 }), []);
    assert.deepEqual(store.listSessions().map((s) => s.id), ["b"]);
    assert.equal(store.events("b", { after: 0, limit: 10 }).length, 1);
    assert.equal(store.deleteSession("a"), false);
  }));

Deno.test("store.appendBatch() many rows per INSERT: 100 new rows of 3 sessions, a gap filled, a seq twice in one batch", () =>
  withStore((store) => {
    for (const id of ["a", "b", "c"]) store.upsertSession(info(id));
    store.appendBatch([ev("a", 1), ev("a", 5)]); // a gap: 2..4 may still come
    const batch = [ev("a", 3), ev("a", 3, "agent_end")]; // 3 fills the gap; the second 3 is a replay
    for (let seq = 6; seq < 106; seq++) {
      batch.push(ev(["a", "b", "c"][seq % 3], seq, "message_end", { n: seq }));
    }
    batch.push(ev("b", 7)); // b's 7 is in this batch already
    const commits = store.appendBatch(batch);
    const inserted = Object.fromEntries(commits.map((c) => [c.sessionId, c.inserted.map((e) => e.seq)]));
    assert.deepEqual(inserted.a, [3, ...range(6, 106).filter((s) => s % 3 === 0)]);
    assert.deepEqual(inserted.b, range(6, 106).filter((s) => s % 3 === 1));
    assert.equal(store.events("a", { after: 2, limit: 1 })[0].type, "agent_start");
    for (const id of ["a", "b", "c"]) {
      const stored = store.events(id, { after: 0, limit: 200 }).map((e) => e.seq);
      assert.deepEqual(stored, [...new Set(stored)].sort((x, y) => x - y), `${id}: each seq once, in order`);
      assert.equal(store.lastSeq(id), Math.max(...stored));
    }
    assert.equal(store.events("b", { after: 6, limit: 1 })[0].type, "message_end", "the first b 7 is kept");
  }));

Deno.test("store.appendBatch() stores row by row when a row it thought new is in the file already", () =>
  withStore((store) => {
    store.upsertSession(info("a"));
    // Another writer put seq 40 in behind the store's back (the cache says lastSeq 0).
    store.db.prepare("INSERT INTO events VALUES ('a', 40, 1, 'agent_start', '{}')").run();
    const commits = store.appendBatch(range(1, 65).map((seq) => ev("a", seq, "message_end", { n: seq })));
    assert.deepEqual(commits[0].inserted.map((e) => e.seq), range(1, 65).filter((s) => s !== 40));
    assert.equal(store.events("a", { after: 39, limit: 1 })[0].type, "agent_start");
    assert.equal(store.events("a", { after: 0, limit: 100 }).length, 64);
  }));

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from }, (_, i) => from + i);
}
