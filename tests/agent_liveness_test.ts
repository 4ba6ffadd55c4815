/**
 * The daemon's two dead-plugin checks (lib/liveness.ts): a plugin that promised its heartbeat
 * (`x-lvmh-heartbeat`) is never pinged and is offline 11–12 s after its last frame; one that did not (an older
 * plugin) is pinged by Deno and offline within 13.5 s. Each goes silent behind a relay that holds its bytes (a
 * paused process, as the daemon sees it), beside a live socket of the same kind that must stay online.
 */
import assert from "node:assert/strict";
import { startInProcess } from "../testing/inproc.ts";
import { connectBrowser, nodelayAgent } from "../testing/agent.ts";
import { pausableProxy } from "../testing/pausable_proxy.ts";
import { PROTOCOL_VERSION } from "../lib/wire.ts";

interface Plugin {
  /** WebSocket pings received (RFC 6455, answered by `ws` itself). */
  pings: number;
  closed: Promise<{ code: number; reason: string }>;
  stop(): void;
}

/** A plugin socket that says hello and, with `beatMs`, promises and sends the application ping that often. */
async function plugin(port: number, token: string, sessionId: string, beatMs?: number): Promise<Plugin> {
  const url = `ws://127.0.0.1:${port}/agent/ws`;
  const { socket } = await nodelayAgent(
    url,
    token,
    sessionId,
    sessionId,
    beatMs ? { "x-lvmh-heartbeat": String(beatMs) } : {},
  );
  const ping = () =>
    socket.send(JSON.stringify({ v: PROTOCOL_VERSION, type: "ping", sessionId, seq: 0, ts: Date.now() }));
  const beat = beatMs ? setInterval(ping, beatMs) : undefined;
  const p: Plugin = {
    pings: 0,
    closed: new Promise((resolve) =>
      socket.once("close", (code: number, reason: Uint8Array) => resolve({ code, reason: `${reason}` }))
    ),
    stop: () => {
      clearInterval(beat);
      socket.terminate();
    },
  };
  socket.on("ping", () => p.pings++);
  return p;
}

Deno.test("daemon: a plugin that promised its heartbeat is offline 11–12 s after it fell silent, never pinged; one that did not is pinged", async () => {
  await using d = await startInProcess();
  await using relay = pausableProxy(d.port);
  const browser = await connectBrowser(d.browserUrl);
  const promised = await plugin(relay.port, d.token, "promised", 1000);
  const older = await plugin(relay.port, d.token, "older");
  const promisedLive = await plugin(d.port, d.token, "promised-live", 1000);
  const olderLive = await plugin(d.port, d.token, "older-live");
  try {
    const ids = ["promised", "older", "promised-live", "older-live"];
    await browser.waitSessions((s) => ids.every((id) => s.get(id)?.online), "all four online");
    relay.pause();
    const t0 = performance.now();
    const offlineAfter = new Map<string, number>();
    await browser.waitSessions(
      (s) => {
        for (const id of ["promised", "older"]) {
          if (!offlineAfter.has(id) && s.get(id)?.online === false) {
            offlineAfter.set(id, performance.now() - t0);
          }
        }
        return offlineAfter.size === 2;
      },
      "both silent plugins offline",
      20_000,
    );
    const promisedMs = offlineAfter.get("promised")!, olderMs = offlineAfter.get("older")!;
    // The last frame came at most 1 s before the pause: 11–12 sweeps of silence, give or take a sweep.
    assert.ok(
      promisedMs > 9_000 && promisedMs < 13_500,
      `promised: offline after ${promisedMs.toFixed(0)} ms`,
    );
    assert.ok(olderMs < 13_500, `older: offline after ${olderMs.toFixed(0)} ms`);
    assert.ok(browser.sessions.get("promised-live")?.online, "the live plugin that promised stays online");
    assert.ok(browser.sessions.get("older-live")?.online, "the live older plugin stays online");
    assert.equal(promised.pings + promisedLive.pings, 0, "no WebSocket ping to a plugin that promised");
    assert.ok(olderLive.pings >= 2, `Deno pings an older plugin (${olderLive.pings} pings)`);

    // Once the silent ones can hear again, each finds the daemon's close waiting.
    relay.resume();
    assert.deepEqual(await promised.closed, { code: 1001, reason: "no frame for 12 s" });
    assert.equal((await older.closed).code, 1001);
  } finally {
    for (const p of [promised, older, promisedLive, olderLive]) p.stop();
    await browser.close();
  }
});
