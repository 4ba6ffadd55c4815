/**
 * Ingest on a shared log (several replicas): one commit in flight per session, what comes meanwhile in the
 * next one, and nothing stored after a failed commit of the same session (it would leave a gap the plugin's
 * replay never fills). The shared log is a stand-in that a test resolves or fails by hand.
 */
import assert from "node:assert/strict";
import { Ingest, type SharedLog } from "./ingest.ts";
import { Store } from "./store.ts";
import { Hub } from "./hub.ts";
import type { AgentEvent, SessionInfo } from "./protocol.ts";
import { waitFor } from "../testing/daemon.ts";
import { sessionInfo } from "../testing/agent.ts";

const ev = (seq: number) => ({ v: 1, sessionId: "s", seq, ts: seq, type: "agent_start" }) as AgentEvent;

/** A shared log whose appends wait until the test settles them, in order. */
function heldLog() {
  const calls: { seqs: number[]; settle: (error?: Error) => void }[] = [];
  const told = { copied: [] as number[], notCopied: 0 };
  const log: SharedLog = {
    append: (_sessionId, events) =>
      new Promise((resolve, reject) => {
        calls.push({
          seqs: events.map((e) => e.seq),
          settle: (error) => error ? reject(error) : resolve({ lastSeq: events.at(-1)!.seq }),
        });
      }),
    copied: (_sessionId, lastSeq) => told.copied.push(lastSeq),
    notCopied: () => told.notCopied++,
    live: () => {},
  };
  return { log, calls, told };
}

async function setup() {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-ingest-shared-" });
  const store = new Store(`${dir}/lvmh.db`);
  store.upsertSession(sessionInfo("s") as SessionInfo);
  const shared = heldLog();
  const ingest = new Ingest(store, new Hub(), () => {}, shared.log);
  const origin = {
    acks: [] as number[],
    failed: 0,
    ack: (n: number) => origin.acks.push(n),
    fail: () => origin.failed++,
  };
  return {
    store,
    ingest,
    origin,
    calls: shared.calls,
    told: shared.told,
    async [Symbol.asyncDispose]() {
      store.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

Deno.test("shared ingest: one commit in flight per session; what came meanwhile goes in the next", async () => {
  await using s = await setup();
  s.ingest.push(ev(1), s.origin);
  s.ingest.flush();
  await waitFor(() => s.calls.length === 1, "the first append");
  for (const seq of [2, 3]) s.ingest.push(ev(seq), s.origin);
  s.ingest.flush();
  assert.equal(s.calls.length, 1, "the second waits for the first");
  s.calls[0].settle();
  await waitFor(() => s.calls.length === 2, "the second append");
  assert.deepEqual(s.calls[1].seqs, [2, 3]);
  s.calls[1].settle();
  await s.ingest.drained();
  assert.equal(s.store.lastSeq("s"), 3, "the replica's file has all three");
  assert.equal(s.origin.acks.at(-1), 3);
});

Deno.test("shared ingest: after a failed commit, what queued behind it is not stored", async () => {
  await using s = await setup();
  s.ingest.push(ev(1), s.origin);
  s.ingest.flush();
  await waitFor(() => s.calls.length === 1, "the first append");
  s.ingest.push(ev(2), s.origin);
  s.ingest.flush();
  s.calls[0].settle(new Error("the database went away"));
  await s.ingest.drained();
  assert.equal(s.calls.length, 1, "seq 2 never sent: stored alone it would hide the lost seq 1");
  assert.equal(s.store.lastSeq("s"), 0);
  assert.ok(s.origin.failed >= 1, "the socket is failed, so the plugin replays both");
  assert.deepEqual(s.origin.acks, []);
});

Deno.test("shared ingest: a commit this file could not store is acked and left to the feed to read back", async () => {
  await using s = await setup();
  const appendBatch = s.store.appendBatch.bind(s.store);
  s.store.appendBatch = () => {
    throw new Error("database or disk is full");
  };
  s.ingest.push(ev(1), s.origin);
  s.ingest.flush();
  await waitFor(() => s.calls.length === 1, "the append");
  s.calls[0].settle();
  await s.ingest.drained();
  assert.deepEqual(s.origin.acks, [1], "in the shared log: acknowledged");
  assert.deepEqual([s.told.copied, s.told.notCopied], [[], 1], "the feed is told to read it back");
  s.store.appendBatch = appendBatch;
  s.ingest.push(ev(2), s.origin);
  s.ingest.flush();
  await waitFor(() => s.calls.length === 2, "the next append");
  s.calls[1].settle();
  await s.ingest.drained();
  assert.deepEqual(s.told.copied, [2], "the next commit is copied (the replica keeps reading back: Replica)");
});
