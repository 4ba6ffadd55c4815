/**
 * Watcher process of bench/fanout.ts: `count` browser sockets on `/ws`, each subscribed to one session. Prints
 * `ready` once every socket has received a "probe" delta (so each is subscribed), then records the delay of
 * every "tok " delta (this process's wall clock − the plugin's `sentAt`, both from testing/proc.ts `wallClock`)
 * until each socket has `deltas` of them or `timeoutMs` passed, and prints one JSON line
 * {delays, missing, offsetMs, stalls, cpuMs} (stalls: this process's own event-loop gaps over 5 ms meanwhile;
 * cpuMs: its own CPU over the recording).
 * Args: browserUrl sessionId count deltas timeoutMs
 */
import { cpuMs, lagMonitor, wallClock } from "../testing/proc.ts";

const [url, sessionId, countArg, deltasArg, timeoutArg] = Deno.args;
const COUNT = Number(countArg), DELTAS = Number(deltasArg), TIMEOUT = Number(timeoutArg);
const clock = wallClock();
const delays: number[] = [];
const probed = new Set<number>();
let got = 0;
let lag: ReturnType<typeof lagMonitor> | null = null;
let cpu0 = NaN;
let finish: () => void;
const finished = new Promise<void>((r) => finish = r);

const sockets = await Promise.all(
  Array.from({ length: COUNT }, (_, i) =>
    new Promise<WebSocket>((resolve, reject) => {
      const socket = new WebSocket(url);
      socket.onmessage = (e) => {
        const now = clock.now();
        const text = e.data as string;
        if (!text.startsWith('{"type":"events"')) return;
        for (const ev of JSON.parse(text).events) {
          if (ev.type !== "message_update") continue;
          if (ev.delta === "probe") {
            if (probed.size < COUNT && probed.add(i).size === COUNT) console.log("ready");
          } else if (probed.size === COUNT) {
            if (!lag) {
              lag = lagMonitor();
              cpu0 = cpuMs(Deno.pid);
            }
            delays.push(now - ev.sentAt);
            if (++got === COUNT * DELTAS) finish();
          }
        }
      };
      socket.onopen = () => {
        socket.send(JSON.stringify({ type: "subscribe", sessionId }));
        resolve(socket);
      };
      socket.onerror = () => reject(new Error(`cannot connect to ${url}`));
    })),
);
const deadline = setTimeout(() => finish(), TIMEOUT);
await finished;
clearTimeout(deadline);
const stalls = lag ? (lag as ReturnType<typeof lagMonitor>).stop() : [];
const cpu = lag ? cpuMs(Deno.pid) - cpu0 : 0;
console.log(
  JSON.stringify({ delays, missing: COUNT * DELTAS - got, offsetMs: clock.offsetMs, stalls, cpuMs: cpu }),
);
for (const s of sockets) s.close();
Deno.exit(0);
