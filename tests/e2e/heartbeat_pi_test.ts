/**
 * The daemon's own dead-peer check (RFC 6455 pings, `IDLE_TIMEOUT_S`): a real pi process with the plugin that is
 * paused (SIGSTOP) shows offline within 15 s, and a continued one (SIGCONT) comes back online with its events
 * complete. Both pi versions. (The other direction, a paused daemon, is plugin_heartbeat_pi_test.ts.)
 */
import assert from "node:assert/strict";
import { startDaemon, waitFor } from "../../testing/daemon.ts";
import { startFakeLlm } from "../../testing/fixtures/fake_llm.mjs";
import { allEvents, assertInstalled, makePiHome, PI_VERSIONS, piRpc, sessions } from "../../testing/pi.ts";
import { connectBrowser } from "../../testing/agent.ts";

for (const v of PI_VERSIONS) {
  Deno.test(`daemon on pi ${v.name}: a paused plugin process is offline within 15 s, and back when it continues`, async () => {
    assertInstalled(v);
    const llm = await startFakeLlm();
    await using home = await makePiHome(llm.url);
    await using d = await startDaemon();
    await using pi = piRpc(v, home, home.env(d));
    const browser = await connectBrowser(d.browserUrl);
    let paused = false;
    try {
      const id = (await waitFor(async () => (await sessions(d)).find((s) => s.online), "pi online"))
        .id as string;
      await browser.waitSessions((s) => s.get(id)?.online === true, "online on /ws");
      Deno.kill(pi.pid, "SIGSTOP");
      paused = true;
      const t0 = performance.now();
      await browser.waitSessions((s) => s.get(id)?.online === false, "offline on /ws", 20_000);
      const took = performance.now() - t0;
      assert.ok(took < 15_000, `offline after ${(took / 1000).toFixed(1)} s`);
      Deno.kill(pi.pid, "SIGCONT");
      paused = false;
      await browser.waitSessions((s) => s.get(id)?.online === true, "online again", 20_000);
      await pi.command({ type: "prompt", message: "TEXTONLY after the pause" });
      const events = await waitFor(
        async () => {
          const evs = await allEvents(d, id);
          return evs.some((e) =>
              (e.message as { text?: string } | undefined)?.text === "You said: TEXTONLY after the pause"
            )
            ? evs
            : null;
        },
        "the answer after the pause",
        20_000,
      );
      const seqs = events.map((e) => e.seq as number);
      assert.deepEqual(seqs, [...new Set(seqs)].sort((a, b) => a - b), "no event twice, in order");
    } finally {
      if (paused) Deno.kill(pi.pid, "SIGCONT");
      await browser.close();
      await llm.close();
    }
  });
}
