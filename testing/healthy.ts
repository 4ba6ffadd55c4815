/**
 * Fault harness helper: a healthy session streaming `message_update` deltas every 3 ms on its own plugin
 * socket, followed by one browser that records each delta's delay (sender clock to receipt, both on this
 * machine). The yardstick for "other sessions' latency unaffected" in the rows that attack the daemon.
 */
import { connectBrowser, nodelayAgent } from "./agent.ts";
import { nowMs } from "./proc.ts";

/** Stream deltas on a TCP_NODELAY socket and collect their delay at one browser until `stop()`. */
export async function healthy(agentUrl: string, browserUrl: string, token: string) {
  const agent = await nodelayAgent(agentUrl, token, "healthy", "h");
  const b = await connectBrowser(browserUrl);
  let delays: number[] = [];
  b.socket.onmessage = (e) => {
    const now = nowMs();
    const f = JSON.parse(e.data);
    if (f.type === "events") {
      for (const ev of f.events) if (ev.type === "message_update") delays.push(now - ev.sentAt);
    }
  };
  b.send({ type: "subscribe", sessionId: "healthy" });
  const timer = setInterval(() => agent.send("message_update", { delta: "t", sentAt: nowMs() }), 3);
  return {
    take() {
      const out = delays.sort((a, b) => a - b);
      delays = [];
      return out;
    },
    async stop() {
      clearInterval(timer);
      await agent.close();
      await b.close();
    },
  };
}
