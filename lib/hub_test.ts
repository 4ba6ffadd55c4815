import assert from "node:assert/strict";
import { eventObject, Hub, MAX_EVENTS_FRAME_BYTES, MAX_SUBSCRIPTIONS, type Subscriber } from "./hub.ts";

function recorder(backlog = () => 0) {
  const sent: string[] = [];
  const closed: number[] = [];
  const sub: Subscriber = {
    send: (d) => sent.push(d),
    bufferedAmount: backlog,
    close: (code) => closed.push(code),
  };
  return { sub, sent, closed };
}
const events = (from: number, n: number, size = 10) =>
  Array.from(
    { length: n },
    (_, i) => ({ seq: from + i, json: JSON.stringify({ seq: from + i, pad: "x".repeat(size) }) }),
  );

Deno.test("hub.publishEvents() reaches only followers, encoded once per frame", () => {
  const hub = new Hub();
  const a = recorder(), b = recorder();
  hub.join(a.sub);
  hub.join(b.sub);
  hub.subscribe(a.sub, "s1");
  hub.publishEvents("s1", 4, events(5, 2));
  assert.equal(a.sent.length, 1);
  assert.equal(b.sent.length, 0);
  const frame = JSON.parse(a.sent[0]);
  assert.equal(frame.type, "events");
  assert.equal(frame.after, 4);
  assert.deepEqual(frame.events.map((e: { seq: number }) => e.seq), [5, 6]);
  hub.unsubscribe(a.sub, "s1");
  hub.publishEvents("s1", 6, events(7, 1));
  assert.equal(a.sent.length, 1);
});

Deno.test("hub.publishEvents() cuts large batches into bounded frames with chained after", () => {
  const hub = new Hub();
  const a = recorder();
  hub.join(a.sub);
  hub.subscribe(a.sub, "s");
  hub.publishEvents("s", 0, events(1, 20, 100_000));
  assert.ok(a.sent.length > 1);
  let after = 0;
  for (const text of a.sent) {
    assert.ok(text.length <= MAX_EVENTS_FRAME_BYTES + 200_000);
    const f = JSON.parse(text);
    assert.equal(f.after, after);
    after = f.events.at(-1).seq;
  }
  assert.equal(after, 20);
});

Deno.test("hub drops a subscriber whose backlog passed the bound, and only it", () => {
  const hub = new Hub({ maxBacklogBytes: 1000 });
  let backlog = 0;
  const slow = recorder(() => backlog), fast = recorder();
  hub.join(slow.sub);
  hub.join(fast.sub);
  hub.broadcast({ type: "error", message: "one" });
  backlog = 5000;
  hub.broadcast({ type: "error", message: "two" });
  assert.deepEqual(slow.closed, [4001]);
  assert.equal(slow.sent.length, 1);
  assert.equal(fast.sent.length, 2);
  assert.equal(hub.size, 1);
});

Deno.test("hub.subscribe() bounds how many sessions one subscriber follows", () => {
  const hub = new Hub();
  const a = recorder();
  hub.join(a.sub);
  for (let i = 0; i < MAX_SUBSCRIPTIONS; i++) hub.subscribe(a.sub, `s${i}`);
  hub.subscribe(a.sub, "s0"); // already followed: fine
  assert.throws(() => hub.subscribe(a.sub, "one-more"), RangeError);
});

Deno.test("hub.leave() and a throwing send remove the subscriber", () => {
  const hub = new Hub();
  const broken: Subscriber = {
    send: () => {
      throw new Error("gone");
    },
    bufferedAmount: () => 0,
    close: () => {},
  };
  hub.join(broken);
  hub.broadcast({ type: "error", message: "x" });
  assert.equal(hub.size, 0);
});

Deno.test("hub: a follower joined without broadcasts gets its session's events only", () => {
  const hub = new Hub();
  const got: string[] = [];
  const follower: Subscriber = { send: (d) => got.push(d), bufferedAmount: () => 0, close() {} };
  hub.join(follower, { broadcasts: false });
  hub.subscribe(follower, "s1");
  hub.broadcast({ type: "pong" });
  hub.publishEvents("s1", 0, [{ seq: 1, json: '{"seq":1}' }]);
  assert.equal(got.length, 1);
  assert.match(got[0], /"type":"events"/);
  assert.equal(hub.size, 0, "not counted as a browser");
});

Deno.test("hub.publishEvents() hands in-process followers the events themselves, and builds no frame for them", () => {
  const hub = new Hub();
  const got: { after: number; seqs: number[]; objects: unknown[] }[] = [];
  const follower: Subscriber = {
    send: () => assert.fail("an in-process follower must not get frames"),
    bufferedAmount: () => 0,
    close() {},
    events: (_id, after, evs) =>
      got.push({ after, seqs: evs.map((e) => e.seq), objects: evs.map((e) => eventObject(e)) }),
  };
  const socket = recorder();
  hub.join(follower, { broadcasts: false });
  hub.subscribe(follower, "s");
  const live = { seq: 3, json: '{"seq":3,"type":"agent_end"}', event: { seq: 3, type: "agent_end" } };
  hub.publishEvents("s", 2, [live, ...events(4, 1)]);
  assert.deepEqual(got, [{ after: 2, seqs: [3, 4], objects: [live.event, { seq: 4, pad: "xxxxxxxxxx" }] }]);
  assert.equal(got[0].objects[0], live.event, "the publisher's object is passed on, not a copy");
  // A socket following the same session still gets the frame.
  hub.join(socket.sub);
  hub.subscribe(socket.sub, "s");
  hub.publishEvents("s", 4, events(5, 1));
  assert.equal(socket.sent.length, 1);
  assert.equal(JSON.parse(socket.sent[0]).events[0].seq, 5);
  assert.equal(got.length, 2);
});

Deno.test("hub: a follower that throws does not stop the others", () => {
  const hub = new Hub();
  const bad: Subscriber = {
    send() {},
    bufferedAmount: () => 0,
    close() {},
    events: () => {
      throw new Error("boom");
    },
  };
  const good = recorder();
  hub.join(bad, { broadcasts: false });
  hub.join(good.sub);
  hub.subscribe(bad, "s");
  hub.subscribe(good.sub, "s");
  const errors: unknown[] = [];
  const original = console.error;
  console.error = (...args: unknown[]) => errors.push(args);
  try {
    hub.publishEvents("s", 0, events(1, 1));
  } finally {
    console.error = original;
  }
  assert.equal(good.sent.length, 1);
  assert.equal(errors.length, 1);
});
