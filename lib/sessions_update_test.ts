/**
 * The registry's one "sessions changed" signal: `session_update` frames at most once per
 * SESSION_UPDATE_INTERVAL_MS however often rows change, holding only the rows that changed, the last change
 * never lost.
 */
import assert from "node:assert/strict";
import { Store } from "./store.ts";
import { Hub, type Subscriber } from "./hub.ts";
import { Ingest } from "./ingest.ts";
import { SESSION_UPDATE_INTERVAL_MS, Sessions } from "./sessions.ts";
import type { ServerFrame, SessionInfo } from "./protocol.ts";
import { sessionInfo } from "../testing/agent.ts";

type Update = Extract<ServerFrame, { type: "session_update" }> & { at: number };

Deno.test("sessions: a storm of row changes is announced at most once per interval, only the changed rows, the last one kept", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-sessions-update-" });
  const store = new Store(`${dir}/lvmh.db`);
  const hub = new Hub();
  const updates: Update[] = [];
  const browser: Subscriber = {
    send: (d) => {
      const f = JSON.parse(d) as ServerFrame;
      if (f.type === "session_update") updates.push({ ...f, at: performance.now() });
    },
    bufferedAmount: () => 0,
    close() {},
  };
  hub.join(browser);
  const ingest = new Ingest(store, hub);
  const sessions = new Sessions(store, ingest, hub, { defaultAsk: [] });
  const ids = Array.from({ length: 20 }, (_, i) => `s${i}`);
  const link = { send() {}, close() {} };
  try {
    for (const id of ids) sessions.connect(sessionInfo(id) as SessionInfo, link);
    await until(
      () => updates.some((u) => u.sessions.length > 0 && u.sessions.at(-1)!.id === "s19"),
      "the hellos",
    );

    // Every row changes every 2 ms (or as often as timers fire on a busy machine), 250 times.
    updates.length = 0;
    const start = performance.now();
    let touches = 0;
    let lastTouch = start;
    for (let round = 0; round < 250; round++) {
      lastTouch = performance.now();
      for (const id of ids) sessions.touch(id);
      touches += ids.length;
      await new Promise((r) => setTimeout(r, 2));
    }
    // The last touches are announced, at once or by the trailing run.
    await until(() => updates.some((u) => u.at >= lastTouch), "the update after the last touch");
    const during = (lastTouch - start) / SESSION_UPDATE_INTERVAL_MS;
    assert.equal(touches, 5000);
    assert.ok(updates.length <= Math.ceil(during) + 1, `${updates.length} frames for ${touches} touches`);
    for (let i = 1; i < updates.length; i++) {
      // Timers may fire late, never early (a millisecond of clock rounding allowed).
      assert.ok(updates[i].at - updates[i - 1].at >= SESSION_UPDATE_INTERVAL_MS - 1, `gap before frame ${i}`);
    }
    const after = updates.filter((u) => u.at >= lastTouch).flatMap((u) => u.sessions.map((s) => s.id));
    assert.deepEqual([...new Set(after)].sort(), [...ids].sort(), "the last change kept");

    // One row changes: the next frame names it alone.
    const before = updates.length;
    sessions.touch("s7");
    await until(() => updates.length > before, "the update for s7");
    assert.deepEqual(updates.slice(before).map((u) => [u.sessions.map((s) => s.id), u.removed]), [[
      ["s7"],
      [],
    ]]);
  } finally {
    sessions.closeAll(1001, "test over");
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
});

async function until(ok: () => boolean, what: string, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
