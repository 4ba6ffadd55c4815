/**
 * Plugin process of bench/fanout.ts: one session on an npm `ws` socket (TCP_NODELAY, as the plugin's), stamping
 * each `message_update` with this process's wall clock (bench/_proc.ts `wallClock`). Prints `ready` once
 * welcomed, then obeys stdin lines: `probe` sends one delta marked "probe" (the watchers' sign that they are
 * subscribed), `go` streams `deltas` deltas 1 ms apart and prints `sent <its CPU ms meanwhile>`. Exits when stdin closes.
 * Args: agentUrl token sessionId deltas
 */
import WebSocket from "ws";
import { cpuMs, wallClock } from "./_proc.ts";

const [url, token, sessionId, deltasArg] = Deno.args;
const DELTAS = Number(deltasArg);
const clock = wallClock();
const ws = new WebSocket(url, { headers: { authorization: `Bearer ${token}` } });
await new Promise((resolve, reject) => {
  ws.once("open", resolve);
  ws.once("error", reject);
});
const welcomed = new Promise((resolve) => ws.once("message", resolve));
ws.send(JSON.stringify({
  v: 1,
  type: "hello",
  sessionId,
  seq: 0,
  ts: Date.now(),
  session: {
    id: sessionId,
    name: "fan",
    cwd: "/",
    model: "m",
    provider: "p",
    agent: false,
    repo: null,
    startedAt: 1_700_000_000_000,
  },
}));
await welcomed;
let seq = 1;
const delta = (text: string) =>
  ws.send(JSON.stringify({
    v: 1,
    sessionId,
    seq: seq++,
    ts: Date.now(),
    type: "message_update",
    delta: text,
    sentAt: clock.now(),
  }));
console.log("ready");

const lines = Deno.stdin.readable.pipeThrough(new TextDecoderStream());
let pending = "";
for await (const chunk of lines) {
  pending += chunk;
  let at;
  while ((at = pending.indexOf("\n")) >= 0) {
    const command = pending.slice(0, at);
    pending = pending.slice(at + 1);
    if (command === "probe") delta("probe");
    else if (command === "go") {
      const cpu0 = cpuMs(Deno.pid);
      for (let i = 0; i < DELTAS; i++) {
        delta("tok ");
        await new Promise((r) => setTimeout(r, 1)); // a token stream, not a burst
      }
      console.log(`sent ${cpuMs(Deno.pid) - cpu0}`);
    }
  }
}
ws.close();
Deno.exit(0);
