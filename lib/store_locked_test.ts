/**
 * The store under another connection's lock (a second node:sqlite handle in this process, as `deno task token`
 * or a sqlite3 shell would hold it): the first write waits the busy timeout once, every later write of any
 * writer on the file fails at once until the lock goes, and then writes resume.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { BUSY_TIMEOUT_MS, Store, WriteRefused } from "./store.ts";
import { GlanceStore } from "./glance_store.ts";
import { EMPTY_RECORD } from "./session_glance.ts";
import type { AgentEvent, SessionInfo } from "./protocol.ts";
import { sessionInfo } from "../testing/agent.ts";

const info = (id: string, name: string | null = null) => sessionInfo(id, { name }) as SessionInfo;
const ev = (sessionId: string, seq: number) =>
  ({ v: 1, sessionId, seq, ts: 1000 + seq, type: "agent_start" }) as AgentEvent;

/** Milliseconds `fn` took, and what it threw. */
function timed(fn: () => unknown): { ms: number; error: unknown } {
  const t0 = performance.now();
  try {
    fn();
    return { ms: performance.now() - t0, error: null };
  } catch (error) {
    return { ms: performance.now() - t0, error };
  }
}

async function until(ok: () => boolean, what: string, ms = 5000): Promise<void> {
  const end = performance.now() + ms;
  while (!ok()) {
    if (performance.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

Deno.test("store under another connection's lock: one busy-timeout wait, then every writer fails at once", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lvmh-store-locked-" });
  const path = `${dir}/lvmh.db`;
  const store = new Store(path);
  const other = new DatabaseSync(path);
  try {
    store.upsertSession(info("a"));
    store.upsertSession(info("b"));
    store.appendBatch([ev("a", 1)]);
    const glances = new GlanceStore(store.db);
    other.exec("BEGIN EXCLUSIVE");

    const first = timed(() => store.appendBatch([ev("a", 2)]));
    assert.match(String(first.error), /database is locked/);
    assert.ok(!(first.error instanceof WriteRefused), "the first write tried the file");
    assert.ok(first.ms >= BUSY_TIMEOUT_MS * 0.9, `the first write waited ${first.ms.toFixed(0)} ms`);

    // Every writer of the file now fails without waiting: events, session rows, glances, settings.
    const writes: [string, () => unknown][] = [
      ["appendBatch", () => store.appendBatch([ev("b", 1)])],
      ["upsertSession", () => store.upsertSession(info("a", "renamed"))],
      ["glances", () => glances.save([["a", { ...EMPTY_RECORD, seq: 1 }]])],
      ["setSetting", () => store.setSetting("k", "v")],
    ];
    for (const [what, write] of writes) {
      const r = timed(write);
      assert.ok(r.error instanceof WriteRefused, `${what}: ${r.error}`);
      assert.ok(r.ms < 50, `${what} waited ${r.ms.toFixed(0)} ms`);
    }
    // A session going idle is not an error; reads answer from the file.
    assert.ok(timed(() => store.setIdle("a")).ms < 50);
    assert.equal(store.events("a", { after: 0, limit: 10 }).length, 1);

    // After the pause a write tries the file again, still without waiting while the lock is held.
    await until(() => store.gate.refusal === null, "the pause to pass");
    const retry = timed(() => store.appendBatch([ev("a", 2)]));
    assert.ok(retry.error instanceof WriteRefused, String(retry.error));
    assert.ok(retry.ms < 50, `the try after the pause waited ${retry.ms.toFixed(0)} ms`);

    other.exec("ROLLBACK");
    await until(() => store.gate.refusal === null, "the next pause to pass");
    const [commit] = store.appendBatch([ev("a", 2)]);
    assert.equal(commit.lastSeq, 2);
    assert.equal(store.gate.refusal, null);
    // The busy timeout is back: a short lock by another process is waited for, not refused.
    assert.equal(
      (store.db.prepare("PRAGMA busy_timeout").get() as { timeout: number }).timeout,
      BUSY_TIMEOUT_MS,
    );
  } finally {
    if (other.isTransaction) other.exec("ROLLBACK");
    other.close();
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
});
