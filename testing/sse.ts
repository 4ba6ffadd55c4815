/**
 * Test helper: a Server-Sent Events client over real `fetch`, recording every event with its id, so stream
 * tests can check ids, order and payloads exactly.
 */
import { waitFor } from "./daemon.ts";

export interface SseMessage {
  id: string | null;
  event: string;
  data: string;
}

export interface SseClient {
  status: number;
  headers: Headers;
  /** Events received so far. */
  events: SseMessage[];
  /** Comment lines received so far (heartbeats). */
  comments: string[];
  /** Resolves once the stream ended (closed by the daemon or by `close`). */
  ended: Promise<void>;
  waitEvent(pred: (e: SseMessage) => boolean, what?: string, timeoutMs?: number): Promise<SseMessage>;
  close(): Promise<void>;
}

/** Open `url` as an SSE stream (bearer token, optional Last-Event-ID) and record what comes. */
export async function openSse(
  url: string,
  token: string | null,
  options: { lastEventId?: string | number; headers?: HeadersInit } = {},
): Promise<SseClient> {
  const headers = new Headers(options.headers);
  headers.set("accept", "text/event-stream");
  if (token) headers.set("authorization", `Bearer ${token}`);
  if (options.lastEventId !== undefined) headers.set("last-event-id", String(options.lastEventId));
  const abort = new AbortController();
  const res = await fetch(url, { headers, signal: abort.signal });
  const events: SseMessage[] = [];
  const comments: string[] = [];
  const ended = (async () => {
    if (!res.body) return;
    const decoder = new TextDecoder();
    let buf = "";
    let cur: SseMessage = { id: null, event: "message", data: "" };
    let hasData = false;
    try {
      for await (const chunk of res.body) {
        buf += decoder.decode(chunk, { stream: true });
        let nl;
        while ((nl = buf.indexOf("\n")) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          if (line === "") {
            if (hasData) events.push(cur);
            cur = { id: null, event: "message", data: "" };
            hasData = false;
          } else if (line.startsWith(":")) comments.push(line);
          else {
            const at = line.indexOf(":");
            const field = at < 0 ? line : line.slice(0, at);
            const value = at < 0 ? "" : line.slice(at + 1).replace(/^ /, "");
            if (field === "id") cur.id = value;
            else if (field === "event") cur.event = value;
            else if (field === "data") {
              cur.data += (hasData ? "\n" : "") + value;
              hasData = true;
            }
          }
        }
      }
    } catch { /* aborted or cut off */ }
  })();
  return {
    status: res.status,
    headers: res.headers,
    events,
    comments,
    ended,
    waitEvent: (pred, what = "an event", timeoutMs = 10_000) =>
      waitFor(() => events.find(pred), what, timeoutMs),
    async close() {
      abort.abort();
      await ended;
    },
  };
}

/** A raw socket that sends the request and then reads nothing: the kernel buffers fill, then the daemon's. */
export async function stalledReader(port: number, token: string, path: string, lastEventId?: number) {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const resume = lastEventId === undefined ? "" : `last-event-id: ${lastEventId}\r\n`;
  await conn.write(new TextEncoder().encode(
    `GET ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${token}\r\n${resume}\r\n`,
  ));
  return conn;
}

/** Read `conn` until the daemon ends it (or `timeoutMs` passes: then it was not cut off); the bytes read. */
export async function drain(
  conn: Deno.TcpConn,
  timeoutMs: number,
): Promise<{ received: number; ended: boolean }> {
  let received = 0;
  let timedOut = false;
  const buf = new Uint8Array(1 << 16);
  const deadline = setTimeout(() => {
    timedOut = true;
    conn.close();
  }, timeoutMs);
  try {
    while (true) {
      const n = await conn.read(buf);
      if (n === null) break;
      received += n;
    }
  } catch { /* reset by the daemon (a cut-off too), or closed by the deadline */ }
  clearTimeout(deadline);
  try {
    conn.close();
  } catch { /* closed already */ }
  return { received, ended: !timedOut };
}
