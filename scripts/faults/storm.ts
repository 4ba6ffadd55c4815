/**
 * Fault rows: many plugin sockets opened at once, then a reconnect storm. `n` sockets dial the daemon in
 * the same instant and each stores one event; the daemon is SIGKILLed and restarted, and all `n` redial
 * within a second: every one must be welcomed, with `lastSeq` equal to what it stored before the kill.
 */
import WebSocket from "ws";
import { eventFrame, helloFrame } from "../../testing/agent.ts";
import { type Daemon, startDaemon } from "../../testing/daemon.ts";

export interface StormResult {
  sockets: number;
  welcomedAtOnce: number;
  openSeconds: number;
  welcomedAfterRestart: number;
  wrongLastSeq: number;
  stormSeconds: number;
}

/** Dial one plugin socket, say hello and resolve with welcome.lastSeq (rejects after `timeoutMs`). */
function hello(d: Daemon, id: string, timeoutMs: number, sendEvent: boolean): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(d.agentUrl, { headers: { authorization: `Bearer ${d.token}` } });
    const timer = setTimeout(() => (ws.terminate(), reject(new Error(`${id}: no welcome`))), timeoutMs);
    ws.on("error", () => {});
    ws.on("close", () => reject(new Error(`${id}: closed`)));
    ws.on("open", () => ws.send(JSON.stringify(helloFrame(id))));
    ws.on("message", (data: unknown) => {
      const f = JSON.parse(String(data));
      if (f.type === "welcome") {
        if (!sendEvent) {
          clearTimeout(timer);
          ws.removeAllListeners("close");
          ws.close();
          return resolve(f.lastSeq);
        }
        const message = {
          role: "user",
          id: "u1",
          text: "hi",
          thinking: null,
          toolCalls: [],
          toolCallId: null,
        };
        ws.send(JSON.stringify(eventFrame(id, f.lastSeq + 1, "message_end", { message })));
      }
      if (f.type === "ack") {
        clearTimeout(timer);
        ws.removeAllListeners("close");
        ws.close();
        resolve(f.lastSeq);
      }
    });
  });
}

/** Run both rows with `n` sockets. */
export async function storm(n: number): Promise<StormResult> {
  const dataDir = await Deno.makeTempDir({ prefix: "lvmh-faults-storm-" });
  let d = await startDaemon({ dataDir });
  try {
    const ids = Array.from({ length: n }, (_, i) => `storm-${i}`);
    let t0 = performance.now();
    const first = await Promise.allSettled(ids.map((id) => hello(d, id, 30_000, true)));
    const openSeconds = (performance.now() - t0) / 1000;
    const stored = first.map((r) => r.status === "fulfilled" ? r.value : -1);
    await d.kill("SIGKILL");
    d = await startDaemon({ dataDir, port: d.port });
    t0 = performance.now();
    const again = await Promise.allSettled(ids.map((id) => hello(d, id, 30_000, false)));
    const stormSeconds = (performance.now() - t0) / 1000;
    let wrong = 0;
    again.forEach((r, i) => {
      if (r.status === "fulfilled" && r.value !== stored[i]) wrong++;
    });
    return {
      sockets: n,
      welcomedAtOnce: stored.filter((s) => s === 1).length,
      openSeconds,
      welcomedAfterRestart: again.filter((r) => r.status === "fulfilled").length,
      wrongLastSeq: wrong,
      stormSeconds,
    };
  } finally {
    await d.stop();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  }
}
