/**
 * Fault row: real plugin instances (the plugin module under a host that drives it like pi) stream events while
 * the daemon is SIGKILLed at random points and restarted on the same port and data dir. Afterwards every
 * session's seqs in SQLite must be complete and unique, and a browser that stayed open (redialling and
 * resubscribing with `after`) must have seen each seq exactly once.
 */
import { startDaemon, waitFor } from "../../testing/daemon.ts";
import { fakePi } from "../../testing/fake_pi.ts";
import { allEvents } from "../../testing/pi.ts";
import { createLvmhAgent } from "../../plugin/lvmh-agent.mjs";
import { followSession } from "../../testing/ws_follower.ts";

export interface KillRestartResult {
  plugins: number;
  kills: number;
  sent: number;
  stored: number;
  lost: number;
  duplicated: number;
  browserDuplicates: number;
  browserMissing: number;
  seconds: number;
}

/** Run the row: `plugins` plugins each fire `events` user messages; the daemon is killed `kills` times. */
export async function killRestart(
  options: { plugins: number; events: number; kills: number },
): Promise<KillRestartResult> {
  const t0 = performance.now();
  const dataDir = await Deno.makeTempDir({ prefix: "lvmh-faults-kill-" });
  const home = await Deno.makeTempDir({ prefix: "lvmh-faults-home-" });
  let d = await startDaemon({ dataDir });
  const port = d.port;
  const ids = Array.from({ length: options.plugins }, (_, i) => `kill-${i}`);
  const pis = ids.map((id) => {
    const pi = fakePi(id, { cwd: home });
    createLvmhAgent({ url: d.agentUrl, token: d.token, home })(pi.pi);
    return pi;
  });
  try {
    await Promise.all(pis.map((p) => p.fire("session_start", { reason: "startup" })));
    const browser = followSession(d.browserUrl, ids[0]);
    // Kill points spread at random over the run, at least one event apart.
    const kills = new Set<number>();
    while (kills.size < options.kills) kills.add(1 + Math.floor(Math.random() * (options.events - 2)));
    for (let i = 0; i < options.events; i++) {
      for (const [n, p] of pis.entries()) {
        const message = {
          role: "user",
          content: [{ type: "text", text: `message ${i} of ${ids[n]}` }],
          timestamp: Date.now(),
        };
        p.fireTimed("message_end", { message });
      }
      await new Promise((r) => setTimeout(r, 5)); // pi awaits between events
      if (kills.has(i)) {
        await d.kill("SIGKILL");
        d = await startDaemon({ dataDir, port });
      }
    }
    const expected = options.events;
    const stored = await waitFor(
      async () => {
        const all = await Promise.all(ids.map((id) => allEvents(d, id)));
        const users = all.map((evs) => evs.filter((e) => e.type === "message_end"));
        return users.every((u) => u.length >= expected) ? all : null;
      },
      "every event stored",
      60_000,
    );
    let storedCount = 0, duplicated = 0, lost = 0;
    for (const evs of stored) {
      const seqs = evs.map((e) => e.seq as number);
      const unique = new Set(seqs);
      duplicated += seqs.length - unique.size;
      const max = Math.max(...seqs);
      for (let s = 1; s <= max; s++) if (!unique.has(s)) lost++;
      const texts = evs.filter((e) => e.type === "message_end").map((e) => JSON.stringify(e.message));
      duplicated += texts.length - new Set(texts).size; // the same message stored under two seqs
      storedCount += texts.length;
    }
    const maxSeq = Math.max(...stored[0].map((e) => e.seq as number));
    await waitFor(() => browser.seen.size >= maxSeq, "the browser caught up", 20_000).catch(() => {});
    let browserDuplicates = 0, browserMissing = 0;
    for (let s = 1; s <= maxSeq; s++) {
      const n = browser.seen.get(s) ?? 0;
      if (n === 0) browserMissing++;
      if (n > 1) browserDuplicates += n - 1;
    }
    browser.close();
    return {
      plugins: options.plugins,
      kills: options.kills,
      sent: options.plugins * options.events,
      stored: storedCount,
      lost: lost + Math.max(0, options.plugins * options.events - storedCount),
      duplicated,
      browserDuplicates,
      browserMissing,
      seconds: (performance.now() - t0) / 1000,
    };
  } finally {
    await Promise.all(pis.map((p) => p.fire("session_shutdown", { reason: "quit" }).catch(() => {})));
    await d.stop();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    // The plugin's batched seq and log writes may land just after shutdown.
    await new Promise((r) => setTimeout(r, 400));
    await Deno.remove(home, { recursive: true }).catch(() => {});
  }
}
