/**
 * Plugin process of bench/fanout.ts: one session on an npm `ws` socket (TCP_NODELAY, as the plugin's), stamping
 * each `message_update` with this process's wall clock (testing/proc.ts `wallClock`). Prints `ready` once
 * welcomed, then obeys stdin lines: `probe` sends one delta marked "probe" (the watchers' sign that they are
 * subscribed), `go` streams `deltas` deltas 1 ms apart and prints `sent <its CPU ms meanwhile>`. Exits when stdin closes.
 * Args: agentUrl token sessionId deltas
 */
import { cpuMs, wallClock } from "../testing/proc.ts";
import { nodelayAgent } from "../testing/agent.ts";

const [url, token, sessionId, deltasArg] = Deno.args;
const DELTAS = Number(deltasArg);
const clock = wallClock();
const agent = await nodelayAgent(url, token, sessionId);
const delta = (text: string) => agent.send("message_update", { delta: text, sentAt: clock.now() });
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
agent.socket.close();
Deno.exit(0);
