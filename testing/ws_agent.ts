/**
 * A plugin-side socket from npm `ws`, as the real plugin uses (TCP_NODELAY, so no delta waits for Nagle, which
 * Deno's own WebSocket client does not turn off): says hello, waits for the welcome, then sends events with
 * consecutive seqs. For the benches and the fault harness's client processes.
 */
import WebSocket from "ws";

export interface WsAgent {
  socket: WebSocket;
  /** Send one event of `type` with the next seq. */
  send(type: string, payload: Record<string, unknown>): void;
  close(): Promise<unknown>;
}

export async function nodelayAgent(
  url: string,
  token: string,
  sessionId: string,
  name = "fan",
): Promise<WsAgent> {
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
      name,
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
  return {
    socket: ws,
    send: (type, payload) =>
      ws.send(JSON.stringify({ v: 1, sessionId, seq: seq++, ts: Date.now(), type, ...payload })),
    close: () =>
      ws.readyState === WebSocket.CLOSED
        ? Promise.resolve()
        : new Promise((resolve) => (ws.once("close", resolve), ws.close())),
  };
}
