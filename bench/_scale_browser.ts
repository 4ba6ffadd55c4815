/**
 * Client process of bench/scale.ts and bench/latency.ts: one browser on `/ws` following one session. After
 * `warmupMs` it counts every byte it receives and the delay of every `message_update` (testing/proc.ts
 * `wallClock` now − the sender's `sentAt`, stamped on the same aligned clock) for `windowMs`, then prints one
 * JSON line {bytesPerSec, delays, frames, from, to} and exits (`from`, `to`: the window on that clock).
 * Args: browserUrl sessionId warmupMs windowMs
 */
import { lagMonitor, wallClock } from "../testing/proc.ts";

const [url, sessionId, warmupArg, windowArg] = Deno.args;
const WARMUP = Number(warmupArg), WINDOW = Number(windowArg);
const clock = wallClock();
const socket = new WebSocket(url);
let counting = false;
let bytes = 0;
let frames = 0;
const delays: number[] = [];
socket.onmessage = (e) => {
  const now = clock.now();
  if (!counting) return;
  const text = e.data as string;
  bytes += new TextEncoder().encode(text).byteLength;
  frames++;
  if (!text.startsWith('{"type":"events"')) return;
  for (const ev of JSON.parse(text).events) if (ev.type === "message_update") delays.push(now - ev.sentAt);
};
await new Promise((resolve, reject) => {
  socket.onopen = resolve;
  socket.onerror = () => reject(new Error(`cannot connect to ${url}`));
});
socket.send(JSON.stringify({ type: "subscribe", sessionId }));
await new Promise((r) => setTimeout(r, WARMUP));
counting = true;
const from = clock.now();
const lag = lagMonitor();
const t0 = performance.now();
await new Promise((r) => setTimeout(r, WINDOW));
counting = false;
const to = clock.now();
const stalls = lag.stop();
if (Deno.env.get("LVMH_BENCH_LAG")) {
  console.error(
    `browser ${sessionId}: ${stalls.length} stalls > 5 ms, worst ${Math.max(0, ...stalls).toFixed(0)}`,
  );
}
const seconds = (performance.now() - t0) / 1000;
console.log(JSON.stringify({ bytesPerSec: bytes / seconds, delays, frames, from, to }));
socket.close();
Deno.exit(0);
