/**
 * Client process of the slow-browser row: a plugin socket that floods one session with large `message_update`
 * deltas, and one ordinary browser that follows that session and reads everything (it must keep up and stay
 * connected while the stuck ones are cut off). Prints "ready", floods until its stdin closes, then prints one
 * JSON line {sent, received, readerClosed}.
 * Args: agentUrl browserUrl token sessionId deltaBytes intervalMs
 */
import WebSocket from "ws";
import { nodelayAgent } from "../../testing/agent.ts";

const [agentUrl, browserUrl, token, sessionId, bytesArg, intervalArg] = Deno.args;
const delta = "d".repeat(Number(bytesArg));
const agent = await nodelayAgent(agentUrl, token, sessionId, "flood");
agent.socket.on("error", () => {});

const reader = new WebSocket(browserUrl);
let received = 0, readerClosed = false;
reader.on("error", () => {});
reader.on("message", (data: Uint8Array) => received += data.length);
reader.on("close", () => readerClosed = true);
await new Promise((r) => reader.once("open", r));
reader.send(JSON.stringify({ type: "subscribe", sessionId }));

let sent = 0;
const timer = setInterval(() => {
  if (agent.socket.bufferedAmount > 4 << 20) return; // the flood is the daemon's to absorb, not this process's
  agent.send("message_update", { delta });
  sent += delta.length;
}, Number(intervalArg));
console.log("ready");
for await (const _ of Deno.stdin.readable) { /* flood until the harness closes our stdin */ }
clearInterval(timer);
console.log(JSON.stringify({ sent, received, readerClosed }));
Deno.exit(0);
