// The floor of bench/latency.ts: the smallest server that does lvmh's job for a delta on this machine. It
// answers a plugin's hello and its heartbeat `ping`, and forwards each `message_update` to the browsers
// following that session in the frame lvmh's browsers read ({type: "events", sessionId, events}); it stores,
// checks and announces nothing. With `--mirror` it also sends everything else lvmh's peers get for the same
// load (bench/_relay_mirror.mjs), still storing nothing.
// Node with the npm `ws` package (what the plugin itself uses; it sets TCP_NODELAY on every socket).
// Prints `ready <port>` once listening; exits when stdin closes.
import http from "node:http";
import { WebSocketServer } from "ws";
import { mirror } from "./_relay_mirror.mjs";

/** sessionId → the browser sockets following it. */
const followers = new Map();
const browsers = new Set();
const mirrored = process.argv.includes("--mirror") ? mirror(followers, browsers) : null;
const server = http.createServer((_req, res) => res.writeHead(404).end());
const wss = new WebSocketServer({ noServer: true });

server.on("upgrade", (req, socket, head) => {
  const agent = new URL(req.url, "http://relay").pathname === "/agent/ws";
  wss.handleUpgrade(req, socket, head, (ws) => (agent ? plugin(ws) : browser(ws)));
});

function plugin(ws) {
  let ack = null;
  ws.on("message", (data) => {
    const frame = JSON.parse(data);
    if (frame.type === "hello") {
      ack = mirrored?.hello(frame, ws);
      return ws.send(JSON.stringify({ type: "welcome", lastSeq: 0 }));
    }
    if (frame.type === "ping") return ws.send(JSON.stringify({ type: "pong" }));
    ack?.(frame.seq);
    if (frame.type !== "message_update") return mirrored?.event(frame);
    const to = followers.get(frame.sessionId);
    if (to) {
      const { sessionId } = frame;
      const out = JSON.stringify(
        mirrored
          ? { type: "events", sessionId, after: mirrored.after(sessionId), events: [frame] }
          : { type: "events", sessionId, events: [frame] },
      );
      for (const b of to) b.send(out);
    }
    mirrored?.touch(frame);
  });
}

function browser(ws) {
  let following = null;
  browsers.add(ws);
  ws.on("message", (data) => {
    const frame = JSON.parse(data);
    if (frame.type !== "subscribe") return;
    following = frame.sessionId;
    if (!followers.has(following)) followers.set(following, new Set());
    followers.get(following).add(ws);
  });
  ws.on("close", () => {
    browsers.delete(ws);
    followers.get(following)?.delete(ws);
  });
}

server.listen(0, "127.0.0.1", () => console.log(`ready ${server.address().port}`));
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
