import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { Ingest } from "./ingest.ts";
import { Store } from "./store.ts";
import { Hub, type Subscriber } from "./hub.ts";
import type { AgentEvent } from "./protocol.ts";
import { waitFor } from "../testing/daemon.ts";

const ev = (sessionId: string, seq: number, type = "agent_start", extra = {}) =>
  ({ v: 1, sessionId, seq, ts: seq, type, ...extra }) as AgentEvent;

/** A store with its writer thread, session "a", an in-order follower and a browser that takes deltas ahead. */
async function setup() {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-writer-" });
  const path = `${dir}/lvmh.db`;
  const store = new Store(path, { writerThread: true });
  store.upsertSession({
    id: "a",
    name: null,
    cwd: "",
    model: null,
    provider: null,
    agent: false,
    repo: null,
    startedAt: 0,
  });
  const hub = new Hub();
  const seen = (frames: number[][], takesDeltasAhead: boolean): Subscriber => ({
    send: (d) => frames.push(JSON.parse(d).events.map((e: { seq: number }) => e.seq)),
    bufferedAmount: () => 0,
    close: () => {},
    takesDeltasAhead,
  });
  const inOrder: number[][] = [], browser: number[][] = [];
  for (const sub of [seen(inOrder, false), seen(browser, true)]) (hub.join(sub), hub.subscribe(sub, "a"));
  const acks: number[] = [];
  let failed = 0;
  const origin = { ack: (n: number) => acks.push(n), fail: () => failed++ };
  const ingest = new Ingest(store, hub);
  /** Another connection to the file, as a sqlite3 shell would hold it. */
  const other = new DatabaseSync(path);
  return {
    store,
    ingest,
    inOrder,
    browser,
    acks,
    failed: () => failed,
    other,
    push: (event: AgentEvent) => ingest.push(event, origin),
    async [Symbol.asyncDispose]() {
      if (other.isTransaction) other.exec("ROLLBACK");
      other.close();
      await store.closeWriter();
      store.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

/** Until the store handed a batch to its thread (the plan is made on the loop, then the thread takes it). */
const onThread = (s: { store: Store }, before: number) =>
  waitFor(() => s.store.lastAppendAt > before, "the batch on the writer thread");

Deno.test("writer thread: the loop goes on while a commit waits for the file, and publishes once it is stored", async () => {
  await using s = await setup();
  s.other.exec("BEGIN IMMEDIATE"); // the file's write lock, held elsewhere
  const before = s.store.lastAppendAt;
  s.push(ev("a", 1));
  s.push(ev("a", 2, "message_update", { delta: "x" }));
  await onThread(s, before);
  // The loop turns (timers fire) while the thread waits for the lock: the commit is not on it.
  for (let i = 0; i < 3; i++) await new Promise((r) => setTimeout(r, 1));
  assert.deepEqual(s.acks, [], "no ack before the commit");
  assert.deepEqual(s.inOrder, [], "nothing for in-order followers before the commit");
  assert.deepEqual(s.browser, [[2]], "the delta went to the browser ahead");
  assert.equal(s.store.lastSeq("a"), 0, "the cached row moves only once stored");
  s.push(ev("a", 3, "message_update", { delta: "y" }));
  assert.deepEqual(s.browser, [[2], [3]], "a delta behind a batch on the thread still goes ahead");
  assert.deepEqual(s.inOrder, [], "and waits for in-order followers");
  s.other.exec("COMMIT");
  await waitFor(() => s.acks.length, "the ack");
  assert.deepEqual(s.acks, [1]);
  assert.equal(s.store.lastSeq("a"), 1);
  await waitFor(() => s.inOrder.flat().includes(3), "the second delta, in order");
  assert.deepEqual(s.inOrder.flat(), [1, 2, 3], "in-order followers get everything in seq order");
  assert.deepEqual(s.browser, [[2], [3], [1]], "the browser gets the stored event, no delta twice");
  assert.deepEqual(s.store.events("a", { after: 0, limit: 10 }).map((e) => e.seq), [1]);
});

Deno.test("writer thread: flush() waits for the batch on the thread, synchronously (a welcome counts it)", async () => {
  await using s = await setup();
  s.other.exec("BEGIN IMMEDIATE");
  const before = s.store.lastAppendAt;
  s.push(ev("a", 1));
  await onThread(s, before);
  s.push(ev("a", 2, "agent_end")); // queued behind the batch on the thread
  s.other.exec("COMMIT");
  // No await from here: only a synchronous wait for the thread can have stored and published both.
  assert.equal(s.ingest.committedSeq("a"), 2);
  assert.deepEqual(s.acks, [1, 2]);
  assert.deepEqual(s.inOrder.flat(), [1, 2]);
  assert.deepEqual(s.store.events("a", { after: 0, limit: 10 }).map((e) => e.seq), [1, 2]);
});

Deno.test("writer thread: a row planned as new but already in the file is stored here, acked, not published twice", async () => {
  await using s = await setup();
  s.push(ev("a", 1));
  s.ingest.flush();
  // Another writer stored seq 2 behind the store's back: the cached lastSeq (1) says it is new.
  s.other.prepare(
    "INSERT INTO events(sessionId, seq, ts, type, payload) VALUES ('a', 2, 2, 'agent_end', '{}')",
  )
    .run();
  s.push(ev("a", 2, "agent_end"));
  s.push(ev("a", 3, "agent_start"));
  await waitFor(() => s.acks.at(-1) === 3, "the ack of seq 3");
  assert.equal(s.failed(), 0);
  assert.deepEqual(s.inOrder.flat(), [1, 3], "seq 2 was there already: not published again");
  assert.deepEqual(s.store.events("a", { after: 0, limit: 10 }).map((e) => e.seq), [1, 2, 3]);
  assert.equal(s.store.lastSeq("a"), 3);
  // The next batch goes to the thread again, and is stored there.
  const before = s.store.lastAppendAt;
  s.push(ev("a", 4, "agent_end"));
  await onThread(s, before);
  await waitFor(() => s.acks.at(-1) === 4, "the ack of seq 4");
  assert.deepEqual(s.inOrder.flat(), [1, 3, 4]);
});

Deno.test("writer thread: a batch the file refuses past the busy timeout fails its sockets, loses nothing stored", async () => {
  await using s = await setup();
  s.other.exec("BEGIN IMMEDIATE");
  s.push(ev("a", 1));
  await waitFor(() => s.failed(), "the failure", 5_000);
  assert.deepEqual(s.acks, [], "nothing acked: the plugin's replay brings it again");
  assert.deepEqual(s.inOrder, []);
  s.other.exec("COMMIT");
  assert.equal(s.store.lastSeq("a"), 0);
  // The replay, once the file takes writes again (the gate's pause over).
  await waitFor(() => !s.store.gate.refusal, "the gate's pause over");
  s.push(ev("a", 1));
  await waitFor(() => s.acks.length, "the replay's ack");
  assert.deepEqual(s.acks, [1]);
  assert.deepEqual(s.store.events("a", { after: 0, limit: 10 }).map((e) => e.seq), [1]);
});
