/**
 * LiveOrder (lib/storage/live_order.ts): a following replica's live deltas wait for the stored events they
 * follow, leave in arrival order, are dropped when stale, expired or past the bounds. The cursor is a map the
 * test moves, standing for the replica's local copy; the clock is the test's.
 */
import assert from "node:assert/strict";
import { LiveOrder, type LiveOrderOptions } from "../lib/storage/live_order.ts";

function harness(options: LiveOrderOptions = {}) {
  const cursors = new Map<string, number>();
  const released: string[] = [];
  const clock = { t: 0 };
  const order = new LiveOrder(
    (sessionId, json, after) => released.push(`${sessionId}@${after}:${json}`),
    (sessionId) => cursors.get(sessionId) ?? -1,
    { now: () => clock.t, expireEveryMs: 0, ...options },
  );
  const delta = (sessionId: string, after: number, json: string) => order.offer({ sessionId, after, json });
  const store = (sessionId: string, seq: number) => {
    cursors.set(sessionId, seq);
    order.advanced(sessionId);
  };
  return { order, cursors, released, clock, delta, store };
}

Deno.test("a delta that follows the cursor is released at once", () => {
  const h = harness();
  h.cursors.set("s", 4);
  h.delta("s", 4, "a");
  assert.deepEqual(h.released, ["s@4:a"]);
  assert.equal(h.order.held, 0);
  assert.deepEqual(h.order.counts, { released: 1, stale: 0, expired: 0, overflow: 0 });
});

Deno.test("deltas wait until the cursor reaches their after, then leave in arrival order", () => {
  const h = harness();
  h.cursors.set("s", 3);
  h.delta("s", 5, "a");
  h.delta("s", 5, "b");
  h.delta("s", 6, "c");
  h.delta("s", 6, "d");
  assert.deepEqual(h.released, []);
  assert.equal(h.order.held, 4);
  h.store("s", 4);
  assert.deepEqual(h.released, [], "4 is not yet 5");
  h.store("s", 5);
  assert.deepEqual(h.released, ["s@5:a", "s@5:b"]);
  // A delta following the cursor while others wait for later events is not among those.
  h.store("s", 6);
  assert.deepEqual(h.released, ["s@5:a", "s@5:b", "s@6:c", "s@6:d"]);
  assert.equal(h.order.held, 0);
});

Deno.test("a delta offered behind held ones of its session waits behind them", () => {
  const h = harness();
  h.cursors.set("s", 5);
  h.delta("s", 6, "later");
  // From an older holder (after below the held one's): it may not overtake; once the cursor passes it, stale.
  h.delta("s", 5, "old");
  assert.deepEqual(h.released, []);
  h.store("s", 6);
  assert.deepEqual(h.released, ["s@6:later"]);
  assert.equal(h.order.counts.stale, 1);
});

Deno.test("sessions do not wait for each other", () => {
  const h = harness();
  h.cursors.set("a", 1);
  h.cursors.set("b", 1);
  h.delta("a", 2, "a1");
  h.delta("b", 1, "b1");
  assert.deepEqual(h.released, ["b@1:b1"]);
  h.store("b", 2);
  h.delta("b", 2, "b2");
  assert.deepEqual(h.released, ["b@1:b1", "b@2:b2"]);
  h.store("a", 2);
  assert.deepEqual(h.released, ["b@1:b1", "b@2:b2", "a@2:a1"]);
});

Deno.test("stale: a delta whose after is below the cursor is dropped, on offer and while held", () => {
  const h = harness();
  h.cursors.set("s", 7);
  // The message it streamed ended at seq 7 (or later), already released: dropped on arrival.
  h.delta("s", 6, "late");
  assert.deepEqual(h.released, []);
  assert.equal(h.order.held, 0);
  assert.equal(h.order.counts.stale, 1);
  // Held for after=9; the feed hands 8..10 over in one batch: 10 > 9, so a newer stored event went first.
  h.delta("s", 9, "jumped");
  assert.equal(h.order.held, 1);
  h.store("s", 10);
  assert.deepEqual(h.released, []);
  assert.equal(h.order.held, 0);
  assert.equal(h.order.counts.stale, 2);
});

Deno.test("the cursor moved without advanced(): the next offer looks again", () => {
  const h = harness();
  h.cursors.set("s", 1);
  h.delta("s", 2, "a");
  h.cursors.set("s", 2);
  h.delta("s", 2, "b");
  assert.deepEqual(h.released, ["s@2:a", "s@2:b"]);
});

Deno.test("a session this replica does not know yet: held until it appears", () => {
  const h = harness();
  h.delta("new", 0, "first");
  assert.equal(h.order.held, 1);
  h.store("new", 0);
  assert.deepEqual(h.released, ["new@0:first"]);
});

Deno.test("expiry: a delta held longer than maxAgeMs is dropped, younger ones stay", () => {
  const h = harness({ maxAgeMs: 2_000 });
  h.cursors.set("s", 0);
  h.delta("s", 1, "old");
  h.clock.t = 1_500;
  h.delta("s", 1, "young");
  h.clock.t = 1_999;
  h.order.expire();
  assert.equal(h.order.held, 2, "not yet 2 s");
  h.clock.t = 2_000;
  h.order.expire();
  assert.equal(h.order.held, 1);
  assert.equal(h.order.counts.expired, 1);
  h.store("s", 1);
  assert.deepEqual(h.released, ["s@1:young"]);
  h.delta("s", 2, "x");
  h.clock.t = 10_000;
  h.order.expire();
  assert.equal(h.order.held, 0);
  assert.equal(h.order.counts.expired, 2);
  h.store("s", 2);
  assert.deepEqual(h.released, ["s@1:young"], "an expired delta is never released");
});

Deno.test("expiry runs by itself while anything is held, and stops with close()", async () => {
  let t = 0;
  const released: string[] = [];
  const order = new LiveOrder((_s, json) => released.push(json), () => 0, {
    maxAgeMs: 50,
    expireEveryMs: 10,
    now: () => t,
  });
  order.offer({ sessionId: "s", after: 1, json: "a" });
  t = 100;
  const deadline = Date.now() + 2_000;
  while (order.held > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  assert.equal(order.held, 0);
  assert.equal(order.counts.expired, 1);
  order.offer({ sessionId: "s", after: 1, json: "b" });
  order.close();
  assert.equal(order.held, 0);
  order.offer({ sessionId: "s", after: 0, json: "c" });
  assert.deepEqual(released, [], "nothing after close");
});

Deno.test("bounds: per session the oldest goes, in all the oldest of any session goes", () => {
  const h = harness({ perSession: 3, total: 5 });
  h.cursors.set("a", 0);
  h.cursors.set("b", 0);
  for (const json of ["a1", "a2", "a3", "a4"]) h.delta("a", 1, json);
  assert.equal(h.order.held, 3);
  assert.equal(h.order.counts.overflow, 1);
  for (const json of ["b1", "b2"]) h.delta("b", 1, json);
  assert.equal(h.order.held, 5);
  h.delta("b", 1, "b3");
  // Six held, five allowed: the oldest of all (a2, a1 went already) is dropped.
  assert.equal(h.order.held, 5);
  assert.equal(h.order.counts.overflow, 2);
  h.store("a", 1);
  h.store("b", 1);
  assert.deepEqual(h.released, ["a@1:a3", "a@1:a4", "b@1:b1", "b@1:b2", "b@1:b3"]);
});

Deno.test("a release that throws does not stop the others", () => {
  const seen: string[] = [];
  const order = new LiveOrder(
    (_s, json) => {
      seen.push(json);
      if (json === "bad") throw new Error("boom");
    },
    () => 1,
    { expireEveryMs: 0 },
  );
  const error = console.error;
  console.error = () => {};
  try {
    order.offer({ sessionId: "s", after: 1, json: "bad" });
    order.offer({ sessionId: "s", after: 1, json: "good" });
  } finally {
    console.error = error;
  }
  assert.deepEqual(seen, ["bad", "good"]);
});
