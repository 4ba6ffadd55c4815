import assert from "node:assert/strict";
import { Ingest } from "./ingest.ts";
import { Store } from "./store.ts";
import { Hub, type Subscriber } from "./hub.ts";
import type { AgentEvent } from "./protocol.ts";

const ev = (sessionId: string, seq: number, type = "agent_start", extra = {}) =>
  ({ v: 1, sessionId, seq, ts: seq, type, ...extra }) as AgentEvent;

async function setup() {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-ingest-" });
  const store = new Store(`${dir}/lvmh.db`);
  for (const id of ["a", "b"]) {
    store.upsertSession({
      id,
      name: null,
      cwd: "",
      model: null,
      provider: null,
      agent: false,
      repo: null,
      startedAt: 0,
    });
  }
  const hub = new Hub();
  const frames: { sessionId: string; after: number; events: { seq: number; type: string }[] }[] = [];
  const sub: Subscriber = {
    send: (d) => frames.push(JSON.parse(d)),
    bufferedAmount: () => 0,
    close: () => {},
  };
  hub.join(sub);
  for (const id of ["a", "b", "ghost"]) hub.subscribe(sub, id);
  const origin = () => {
    const o = { acks: [] as number[], failed: 0, ack: (n: number) => o.acks.push(n), fail: () => o.failed++ };
    return o;
  };
  const commits: string[][] = [];
  const ingest = new Ingest(store, hub, (c) => commits.push(c.map((x) => x.sessionId)));
  return {
    store,
    hub,
    frames,
    origin,
    ingest,
    commits,
    async [Symbol.asyncDispose]() {
      store.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

Deno.test("ingest.flush() stores, then acks and publishes in seq order with deltas in place", async () => {
  await using s = await setup();
  const o = s.origin();
  s.ingest.push(ev("a", 1), o);
  s.ingest.push(ev("a", 2, "message_update", { delta: "x" }), o); // queued behind seq 1, not sent ahead of it
  s.ingest.push(ev("a", 3, "agent_end", { usage: {} }), o);
  assert.equal(s.frames.length, 0, "nothing is published before the commit");
  s.ingest.flush();
  assert.deepEqual(o.acks, [3]);
  assert.deepEqual(s.frames[0].events.map((e) => [e.seq, e.type]), [
    [1, "agent_start"],
    [2, "message_update"],
    [
      3,
      "agent_end",
    ],
  ]);
  assert.deepEqual(s.store.events("a", { after: 0, limit: 10 }).map((e) => e.seq), [1, 3]);
  assert.deepEqual(s.commits, [["a"]]);
});

Deno.test("ingest publishes a delta at once when nothing of its session waits for the disk", async () => {
  await using s = await setup();
  s.ingest.push(ev("a", 1, "message_update", { delta: "now" }), s.origin());
  assert.equal(s.frames.length, 1);
  assert.equal(s.frames[0].events[0].seq, 1);
});

Deno.test("ingest fails only the origin whose session cannot be stored", async () => {
  await using s = await setup();
  const good = s.origin(), bad = s.origin();
  s.ingest.push(ev("a", 1), good);
  s.ingest.push(ev("ghost", 1), bad);
  s.ingest.push(ev("b", 1), good);
  s.ingest.flush();
  assert.equal(bad.failed, 1, "the failing session's socket is told");
  assert.deepEqual(bad.acks, []);
  assert.equal(good.failed, 0);
  assert.deepEqual(good.acks, [1, 1]);
  assert.equal(s.store.lastSeq("a"), 1);
  assert.equal(s.store.lastSeq("b"), 1);
  assert.ok(!s.frames.some((f) => f.sessionId === "ghost"), "nothing unstored is published");
});

Deno.test("ingest batches pushes of one tick into one commit", async () => {
  await using s = await setup();
  const o = s.origin();
  for (let i = 1; i <= 100; i++) s.ingest.push(ev("a", i), o);
  await new Promise((r) => setTimeout(r, 0)); // the scheduled flush runs on the next timer tick
  assert.deepEqual(s.commits, [["a"]]);
  assert.deepEqual(o.acks, [100]);
});

Deno.test("ingest: a delta queued behind its session's events reaches browsers at once, everyone else in order after the commit", async () => {
  await using s = await setup();
  const browser: { after: number; seqs: number[] }[] = [];
  const hub = s.hub;
  const page: Subscriber = {
    send: (d) =>
      browser.push({
        after: JSON.parse(d).after,
        seqs: JSON.parse(d).events.map((e: { seq: number }) => e.seq),
      }),
    bufferedAmount: () => 0,
    close: () => {},
    takesDeltasAhead: true,
  };
  hub.join(page);
  hub.subscribe(page, "a");
  const o = s.origin();
  s.ingest.push(ev("a", 1, "message_start", { message: { role: "assistant", id: "m" } }), o);
  s.ingest.push(ev("a", 2, "message_update", { delta: "x" }), o);
  assert.deepEqual(
    browser,
    [{ after: 0, seqs: [2] }],
    "the delta, ahead of seq 1 still waiting for the disk",
  );
  assert.equal(s.frames.length, 0, "the in-order follower gets nothing before the commit");
  await null;
  assert.equal(s.frames.length, 0, "the commit waits for its timer, not right behind the delta's frame");
  s.ingest.flush();
  assert.deepEqual(s.frames.map((f) => f.events.map((e) => e.seq)), [[1, 2]], "in order, the delta in place");
  assert.deepEqual(
    browser,
    [{ after: 0, seqs: [2] }, { after: 0, seqs: [1] }],
    "the stored event, not the delta twice",
  );
  assert.deepEqual(o.acks, [1]);
  s.ingest.push(ev("a", 3, "message_update", { delta: "y" }), o);
  assert.deepEqual(
    browser.at(-1),
    { after: 1, seqs: [3] },
    "with nothing waiting, a delta goes to all at once",
  );
  assert.deepEqual(s.frames.at(-1)!.events.map((e) => e.seq), [3]);
});
