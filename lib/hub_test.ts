import assert from "node:assert/strict";
import { Hub, MAX_EVENTS_FRAME_BYTES, MAX_SUBSCRIPTIONS, type Subscriber } from "./hub.ts";

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
