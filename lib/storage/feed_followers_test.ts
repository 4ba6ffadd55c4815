/**
 * The followers' handling of sessions written by this process itself (a holder's): hints and sweeps leave them
 * to the writer's `advance`, a deletion still reaches the follower, and once the writer is gone the next sweep
 * reads what the follower missed. The source is an in-memory log, so each read can be counted.
 */
import assert from "node:assert/strict";
import { type FeedSource, Followers } from "./feed_followers.ts";
import type { EventRow } from "./event_log.ts";
import type { FeedBatch, SessionChange } from "./event_feed.ts";

/** Sessions' rows in memory, counting the event reads. */
class MemoryLog implements FeedSource {
  rows = new Map<string, EventRow[]>();
  reads = 0;
  append(sessionId: string, n: number): number {
    const rows = this.rows.get(sessionId) ?? [];
    for (let i = 0; i < n; i++) {
      rows.push({ sessionId, seq: rows.length + 1, ts: 0, type: "message_end", payload: "{}" } as EventRow);
    }
    this.rows.set(sessionId, rows);
    return rows.length;
  }
  counters() {
    return Promise.resolve(new Map([...this.rows].map(([id, rows]) => [id, rows.length])));
  }
  counter(sessionId: string) {
    return Promise.resolve(this.rows.get(sessionId)?.length ?? null);
  }
  events(sessionId: string, after: number, limit: number) {
    this.reads++;
    return Promise.resolve((this.rows.get(sessionId) ?? []).filter((r) => r.seq > after).slice(0, limit));
  }
}

/** Resolves once `check` holds, polling the microtask queue (everything here is in memory). */
async function settled(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 0));
  }
  assert.fail(`never: ${what}`);
}

Deno.test("a session written here is advanced by its writer, not read back; a deletion still counts", async () => {
  const log = new MemoryLog();
  const held = new Set(["own"]);
  // A sweep period far beyond the test: every sweep here is called by hand.
  const followers = new Followers(log, 3_600_000, 100, (id) => held.has(id));
  const batches: FeedBatch[] = [];
  const changes: SessionChange[] = [];
  const stop = await followers.follow((b) => batches.push(b), (c) => changes.push(c), new Map());
  try {
    // The writer's own new session: it advances the cursor; its hint and a sweep read nothing.
    const last = log.append("own", 5);
    followers.advance("own", last);
    followers.hint("own", last);
    await followers.sweep();
    // Another writer's session is read as ever.
    followers.hint("other", log.append("other", 2));
    await settled(() => batches.length === 1, "the other session read");
    assert.deepEqual(batches.map((b) => [b.sessionId, b.events.length]), [["other", 2]]);
    assert.equal(log.reads, 1, "only the other session was read");

    // Committed, its answer not back at the writer yet: a sweep leaves it to the writer.
    log.append("own", 3);
    await followers.sweep();
    assert.equal(log.reads, 1);

    // The writer is gone (its socket closed, or another replica took over): the next sweep reads from the
    // cursor the writer left, nothing before it.
    held.delete("own");
    await followers.sweep();
    await settled(() => batches.length === 2, "the missed events read");
    assert.deepEqual([batches[1].sessionId, batches[1].after, batches[1].events.map((e) => e.seq)], [
      "own",
      5,
      [6, 7, 8],
    ]);

    // Written here again and deleted by someone else: the deletion is told.
    held.add("own");
    log.rows.delete("own");
    followers.hint("own", -1);
    await settled(() => changes.some((c) => c.change === "deleted"), "the deletion told");
    assert.deepEqual(changes.filter((c) => c.sessionId === "own"), [{ sessionId: "own", change: "deleted" }]);
  } finally {
    stop();
  }
});
