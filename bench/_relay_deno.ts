/**
 * bench/_relay.mjs on lvmh's own runtime (`Deno.serve`, `Deno.upgradeWebSocket`): the floor of Deno itself,
 * so bench/latency.ts (`SEGMENTS=1`) can tell what the runtime costs from what lvmh's work does. It answers a
 * plugin's hello and its heartbeat `ping`, and forwards each `message_update` to the session's browsers,
 * storing nothing; with `LVMH_TRACE_DELTAS` it traces each delta as the daemon does (lib/delta_trace.ts).
 * Prints `ready <port>` once listening; exits when stdin closes.
 */
import { deltaTrace } from "../lib/delta_trace.ts";

/** sessionId → the browser sockets following it. */
const followers = new Map<string, Set<WebSocket>>();

function plugin(socket: WebSocket) {
  socket.onmessage = (e) => {
    const span = deltaTrace?.arrived(e.data);
    const frame = JSON.parse(e.data);
    if (frame.type === "hello") return socket.send(JSON.stringify({ type: "welcome", lastSeq: 0 }));
    if (frame.type === "ping") return socket.send(JSON.stringify({ type: "pong" }));
    if (frame.type !== "message_update") return;
    const out = JSON.stringify({ type: "events", sessionId: frame.sessionId, events: [frame] });
    for (const b of followers.get(frame.sessionId) ?? []) b.send(out);
    if (span) deltaTrace!.handled(span);
  };
}

function browser(socket: WebSocket) {
  let following: string | null = null;
  socket.onmessage = (e) => {
    const frame = JSON.parse(e.data);
    if (frame.type !== "subscribe") return;
    following = frame.sessionId as string;
    if (!followers.has(following)) followers.set(following, new Set());
    followers.get(following)!.add(socket);
  };
  socket.onclose = () => following && followers.get(following)?.delete(socket);
}

Deno.serve(
  { hostname: "127.0.0.1", port: 0, onListen: ({ port }) => console.log(`ready ${port}`) },
  (req) => {
    const { socket, response } = Deno.upgradeWebSocket(req);
    (new URL(req.url).pathname === "/agent/ws" ? plugin : browser)(socket);
    return response;
  },
);
for await (const _ of Deno.stdin.readable) { /* until stdin closes */ }
Deno.exit(0);
