/**
 * The reference of the malformed-frames row: a process that takes the attacker's sockets and drops every frame,
 * so the same attack can run while the daemon hears none of it. What the healthy session then loses is this
 * 2-core machine's contention (the attacker's own CPU, the kernel's loopback), not the daemon's handling.
 * Prints its ws:// base URL on the first line of stdout; runs until killed.
 */
const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
  if (req.headers.get("upgrade") !== "websocket") return new Response("sink", { status: 404 });
  const { socket, response } = Deno.upgradeWebSocket(req);
  socket.onmessage = () => {};
  socket.onerror = () => {};
  return response;
});
console.log(`ws://127.0.0.1:${(server.addr as Deno.NetAddr).port}`);
