/**
 * The search index through a daemon SIGKILL: a plugin streams searchable events while the daemon is killed and
 * restarted; each event is found by its own word, and once the index has caught up every stored searchable
 * event has exactly one index row and every index row has its event (nothing missing, nothing stale).
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { freePort, startDaemon, waitFor } from "../testing/daemon.ts";
import { connectAgent, userEnd } from "../testing/agent.ts";

Deno.test("search: the index survives SIGKILL and a restart with no missing or stale rows", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "lvmh-search-kill-" });
  const port = freePort();
  try {
    let daemon = await startDaemon({ dataDir, port });
    let agent = await connectAgent(daemon, { sessionId: "kill-find" });
    // A steady stream, killed in the middle of it.
    for (let i = 1; i <= 300; i++) agent.send("message_end", userEnd(`u${i}`, `marker${i} text`));
    await waitFor(async () => {
      const res = await daemon.api("/api/sessions/kill-find/events?after=100&limit=1");
      return (await res.json()).length === 1 || undefined;
    }, "a hundred events stored");
    await daemon.kill("SIGKILL");
    await agent.close().catch(() => {});
    daemon = await startDaemon({ dataDir, port });
    try {
      // The plugin comes back and replays what was not acknowledged; its seqs go on after the stored ones.
      agent = await connectAgent(daemon, { sessionId: "kill-find" });
      const resumed = agent.welcome.lastSeq as number;
      assert.ok(resumed >= 100 && resumed <= 300, `stored before the kill: ${resumed}`);
      for (let i = resumed + 1; i <= 320; i++) agent.send("message_end", userEnd(`u${i}`, `marker${i} text`));
      await waitFor(async () => {
        const res = await daemon.api("/api/sessions/kill-find/events?after=319&limit=1");
        return (await res.json()).length === 1 || undefined;
      }, "every event stored after the restart");
      for (const i of [1, resumed, resumed + 1, 320]) {
        const page = await (await daemon.api(`/api/search?q=marker${i}`)).json();
        assert.deepEqual(page.hits.map((h: { seq: number }) => h.seq), [i], `marker${i}`);
      }
      // The index follows the events behind ingest: wait until it has reached the last one.
      await waitFor(() => {
        const db = new DatabaseSync(`${dataDir}/lvmh.db`, { readOnly: true });
        try {
          const top = db.prepare("SELECT max(rowid) AS m FROM events").get() as { m: number };
          const upto = db.prepare("SELECT value FROM search_meta WHERE key = 'indexed_upto'").get() as
            | { value: number }
            | undefined;
          return (upto?.value ?? 0) >= top.m || undefined;
        } finally {
          db.close();
        }
      }, "the index caught up");
      await agent.close();
    } finally {
      await daemon.stop();
    }
    const db = new DatabaseSync(`${dataDir}/lvmh.db`, { readOnly: true });
    try {
      const events = db.prepare(
        "SELECT rowid FROM events WHERE sessionId = 'kill-find' AND type = 'message_end' ORDER BY rowid",
      ).all().map((r) => Number(r.rowid));
      const rows = db.prepare("SELECT rowid FROM search_fts WHERE rowid > 0 ORDER BY rowid").all()
        .map((r) => Number(r.rowid));
      assert.equal(events.length, 320);
      assert.deepEqual(rows, events, "one index row per event, and no other");
    } finally {
      db.close();
    }
  } finally {
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
});
