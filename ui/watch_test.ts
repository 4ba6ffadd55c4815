import assert from "node:assert/strict";
import type { LocalStore } from "./local_store.ts";
import { notifySettled, setWatched, watchedSessions } from "./watch.ts";

function memory(): LocalStore {
  const m = new Map<string, string>();
  return {
    getItem: (k) => m.get(k) ?? null,
    setItem: (k, v) => void m.set(k, v),
    removeItem: (k) => void m.delete(k),
  };
}

Deno.test("watch list: add, remove, survive garbage", () => {
  const s = memory();
  assert.deepEqual([...watchedSessions(s)], []);
  setWatched("a", true, s);
  setWatched("b", true, s);
  setWatched("a", false, s);
  assert.deepEqual([...watchedSessions(s)], ["b"]);
  s.setItem("lvmh.watched", "{not json");
  assert.deepEqual([...watchedSessions(s)], []);
});

Deno.test("notifySettled() is a no-op without the Notification API", () => {
  const s = memory();
  setWatched("a", true, s);
  notifySettled("a", "A", s); // Deno has no Notification: must not throw
});
