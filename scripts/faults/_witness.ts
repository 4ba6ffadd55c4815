/**
 * Fault harness helper: a plugin socket that writes the protocol by hand so every `ack` it gets is on record.
 * It streams events until the daemon closes it, then reports the highest acked seq and how the socket ended:
 * the daemon may only have acked what it committed, so SQLite must hold every seq up to that ack.
 */
import WebSocket from "ws";
import { eventFrame, helloFrame } from "../../testing/agent.ts";
import type { Daemon } from "../../testing/daemon.ts";

export interface WitnessEnd {
  /** Close code the daemon chose. */
  code: number;
  reason: string;
  /** Highest `lastSeq` of any ack received. */
  maxAck: number;
  /** Highest seq sent. */
  lastSent: number;
}

export interface Witness {
  /** Resolves when the daemon closed the socket. */
  ended: Promise<WitnessEnd>;
  stop(): void;
}

/** Stream events of `pad` characters every `intervalMs` as session `id`. */
export function witness(d: Pick<Daemon, "agentUrl" | "token">, id: string, pad: number, intervalMs = 5) {
  const ws = new WebSocket(d.agentUrl, { headers: { authorization: `Bearer ${d.token}` } });
  let maxAck = 0, seq = 0;
  let timer: ReturnType<typeof setInterval> | undefined;
  const text = "w".repeat(pad);
  let error = "";
  ws.on("error", (e: Error) => error = e.message);
  ws.on("open", () => ws.send(JSON.stringify(helloFrame(id))));
  ws.on("message", (data: unknown) => {
    const f = JSON.parse(String(data));
    if (f.type === "welcome") {
      seq = f.lastSeq;
      timer = setInterval(() => {
        if (ws.readyState !== WebSocket.OPEN) return;
        seq++;
        const message = {
          role: "user",
          id: `w${seq}`,
          text,
          thinking: null,
          toolCalls: [],
          toolCallId: null,
        };
        ws.send(JSON.stringify(eventFrame(id, seq, "message_end", { message })));
      }, intervalMs);
    }
    if (f.type === "ack") maxAck = Math.max(maxAck, f.lastSeq);
  });
  const ended = new Promise<WitnessEnd>((resolve) =>
    ws.on("close", (code: number, reason: Uint8Array) => {
      clearInterval(timer);
      resolve({ code, reason: String(reason) || error, maxAck, lastSent: seq });
    })
  );
  return {
    ended,
    stop() {
      clearInterval(timer);
      ws.terminate();
    },
  } satisfies Witness;
}
