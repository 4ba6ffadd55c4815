/**
 * Client process of bench/scale.ts: opens N plugin sockets (hello → welcome), then makes the first `working`
 * sessions run every `interval` ms (agent_start, a user message, 5 streamed `message_update` deltas stamped with
 * the wall clock, message_end, agent_end), until stdin closes. Prints `ready` once every socket is welcomed.
 * Args: agentUrl token n working intervalMs [from]: the sessions are `scale-<from>` … `scale-<from+n-1>`, so the
 * idle sockets and the working ones can be two processes, as a deployment has them (bench/latency.ts).
 * Deltas are stamped with testing/proc.ts `wallClock`, comparable with the browsers' processes.
 *
 * The sockets are npm `ws` ones, as in the real plugin: they set TCP_NODELAY, while Deno's own WebSocket client
 * leaves Nagle on, which holds each small delta until the previous one is acknowledged (~40 ms on loopback).
 * Like the real plugin, each promises its heartbeat on the upgrade (`x-lvmh-heartbeat`) and sends the
 * application `ping` every HEARTBEAT_PING_MS from its welcome on (`LVMH_BENCH_PROMISE=0`: pings, no promise).
 */
import WebSocket from "ws";
import { eventFrame, helloFrame, sessionInfo } from "../testing/agent.ts";
import { lagMonitor, wallClock } from "../testing/proc.ts";
import { HEARTBEAT_HEADER, PROTOCOL_VERSION } from "../lib/wire.ts";
import { HEARTBEAT_PING_MS } from "../plugin/src/constants.ts";

const [url, token, nArg, workingArg, intervalArg, fromArg] = Deno.args;
const N = Number(nArg),
  WORKING = Number(workingArg),
  INTERVAL = Number(intervalArg),
  FROM = Number(fromArg ?? 0);
const clock = wallClock();
const TEXT = "lorem ipsum dolor sit amet ".repeat(4);

interface Agent {
  id: string;
  socket: WebSocket;
  seq: number;
}

const PROMISE = Deno.env.get("LVMH_BENCH_PROMISE") !== "0";
const beats: ReturnType<typeof setInterval>[] = [];

function open(i: number): Promise<Agent> {
  const id = `scale-${i}`;
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (PROMISE) headers[HEARTBEAT_HEADER] = String(HEARTBEAT_PING_MS);
  const socket = new WebSocket(url, { headers });
  const ping = JSON.stringify({ v: PROTOCOL_VERSION, type: "ping", sessionId: id, seq: 0, ts: Date.now() });
  return new Promise((resolve, reject) => {
    socket.onmessage = (e: { data: unknown }) => {
      const f = JSON.parse(String(e.data));
      if (f.type !== "welcome") return;
      beats.push(setInterval(() => socket.send(ping), HEARTBEAT_PING_MS));
      resolve({ id, socket, seq: f.lastSeq + 1 });
    };
    socket.onerror = () => reject(new Error(`socket ${i} failed`));
    socket.onopen = () =>
      socket.send(JSON.stringify(helloFrame(id, sessionInfo(id, { name: `session ${i}` }))));
  });
}

const agents: Agent[] = [];
// Real sessions start at random times, so the daemon's per-socket WebSocket pings (every 4.5 s, timed from each
// socket's open) are spread evenly. Opening thousands at once would line them up into bursts of hundreds of
// pings, a load no real population makes: spread the opens over one ping interval.
const SPREAD_MS = 4500, WAVES = 300;
const wave = Math.ceil(N / WAVES);
const opening: Promise<Agent>[] = [];
for (let i = 0; i < N; i += wave) {
  const t0 = performance.now();
  for (let k = i; k < Math.min(N, i + wave); k++) opening.push(open(FROM + k));
  const wait = SPREAD_MS / WAVES - (performance.now() - t0);
  if (N > WAVES && wait > 0) await new Promise((r) => setTimeout(r, wait));
}
agents.push(...await Promise.all(opening));
const lag = lagMonitor();
console.log("ready");

const send = (a: Agent, type: string, payload: Record<string, unknown> = {}) =>
  a.socket.send(JSON.stringify(eventFrame(a.id, a.seq++, type, payload)));
const msg = (role: string, id: string) => ({
  message: { role, id, text: TEXT, thinking: null, toolCalls: [], toolCallId: null },
});

let run = 0;
async function work(a: Agent) {
  const r = run++;
  send(a, "agent_start");
  send(a, "message_end", msg("user", `u${r}`));
  send(a, "message_start", { message: { role: "assistant", id: `a${r}` } });
  for (let k = 0; k < 5; k++) {
    send(a, "message_update", { delta: "token ", sentAt: clock.now() });
    await new Promise((res) => setTimeout(res, 10));
  }
  send(a, "message_end", msg("assistant", `a${r}`));
  send(a, "agent_end");
}
const timers = agents.slice(0, WORKING).map((a, i) =>
  setTimeout(() => {
    work(a);
    timers[i] = setInterval(() => work(a), INTERVAL);
  }, (INTERVAL / WORKING) * i) // spread the working sessions over the interval
);

// Stop when the parent closes stdin.
for await (const _ of Deno.stdin.readable) { /* drain */ }
for (const t of [...timers, ...beats]) clearInterval(t);
if (Deno.env.get("LVMH_BENCH_LAG")) {
  const s = lag.stop().sort((a, b) => b - a);
  console.error(
    `agents process: ${s.length} event-loop stalls > 5 ms, worst ${s.slice(0, 8).map((x) => x.toFixed(0))}`,
  );
}
for (const a of agents) a.socket.close();
Deno.exit(0);
