import assert from "node:assert/strict";
import { Presence, PRESENCE_TIMEOUT_MS } from "./presence.ts";
import type { ServerFrame } from "./protocol.ts";
import { ConflictError, InvalidError } from "./errors.ts";

function setup() {
  let now = 1_000_000;
  const frames: ServerFrame[] = [];
  const p = new Presence((f) => frames.push(f), { now: () => now, sweepMs: 0 });
  return { p, frames, tick: (ms: number) => (now += ms), now: () => now };
}

Deno.test("Presence: one watcher per person, typing if any tab types; frames only on change", () => {
  const { p, frames } = setup();
  p.watch("c1", "alice", "s1", false);
  p.watch("c2", "alice", "s1", true);
  p.watch("c3", "bob", "s1", false);
  p.watch("c3", "bob", "s1", false); // the same again: no frame
  assert.equal(frames.length, 3);
  assert.deepEqual(p.frame("s1"), {
    type: "presence",
    sessionId: "s1",
    watchers: [{ name: "alice", typing: true }, { name: "bob", typing: false }],
  });
  p.leave("c2");
  assert.deepEqual(frames.at(-1), {
    type: "presence",
    sessionId: "s1",
    watchers: [{ name: "alice", typing: false }, { name: "bob", typing: false }],
  });
});

Deno.test("Presence: a page whose heartbeat stopped leaves; one that pings stays", () => {
  const { p, frames, tick } = setup();
  p.watch("quiet", "alice", "s1", false);
  p.watch("alive", "bob", "s1", false);
  tick(PRESENCE_TIMEOUT_MS - 1000);
  p.seen("alive");
  tick(2000);
  p.sweep();
  assert.deepEqual((frames.at(-1) as { watchers: unknown }).watchers, [{ name: "bob", typing: false }]);
  tick(PRESENCE_TIMEOUT_MS + 1);
  p.sweep();
  assert.deepEqual(p.frames(), []);
});

Deno.test("Presence: the wheel blocks others until released or expired; force overrides", () => {
  const { p, tick } = setup();
  assert.throws(() => p.take("s1", "alice", 0), InvalidError);
  assert.throws(() => p.take("s1", "alice", 121), InvalidError);
  const w = p.take("s1", "alice", 10);
  assert.equal(w.holder, "alice");
  assert.equal(p.checkSteer("s1", "alice"), false, "the holder steers");
  assert.throws(
    () => p.checkSteer("s1", "bob"),
    (e) => e instanceof ConflictError && /^alice is steering until/.test(e.message),
  );
  assert.equal(p.checkSteer("s1", "bob", true), true, "forced: to be audited");
  assert.throws(() => p.take("s1", "bob", 5), ConflictError);
  assert.equal((p.frame("s1") as { wheel?: unknown }).wheel !== undefined, true);
  tick(10 * 60_000);
  assert.equal(p.checkSteer("s1", "bob"), false, "expired");
  p.take("s1", "bob", 5);
  assert.equal(p.release("s1")?.holder, "bob");
  assert.equal(p.wheel("s1"), null);
});

Deno.test("Presence: a socket watches one session at a time; watching another moves it", () => {
  const { p } = setup();
  type PresenceFrame = Extract<ServerFrame, { type: "presence" }>;
  const watchers = (id: string) => (p.frame(id) as PresenceFrame).watchers;
  for (let i = 0; i < 1000; i++) p.watch("c1", "mallory", `s${i}`, false);
  assert.deepEqual(watchers("s0"), [], "it left the first one");
  assert.deepEqual(watchers("s999"), [{ name: "mallory", typing: false }]);
  assert.equal(p.frames().length, 1, "one entry for the socket");
});
