/**
 * Fault harness helper: a browser that stops reading. It speaks just enough WebSocket over a raw TCP socket to
 * upgrade `/ws` and subscribe, then never reads again, so the kernel's buffers fill and the daemon's writes
 * to it back up. `drain()` later reads everything that was queued for it and reports how the stream ended:
 * a daemon that cut the browser off left a close frame (code 4001) at the end, then closed the connection.
 */
export interface StuckEnd {
  /** Bytes received after the upgrade. */
  bytes: number;
  /** The close frame's code, or null when the stream ended (or the wait ran out) without one. */
  closeCode: number | null;
  /** True when the daemon ended the TCP connection. */
  eof: boolean;
}

export interface StuckBrowser {
  drain(timeoutMs?: number): Promise<StuckEnd>;
  close(): void;
}

/** Connect to `url` (a `ws://host:port/ws?token=` URL), subscribe to `sessionId`, stop reading. */
export async function stuckBrowser(url: string, sessionId: string): Promise<StuckBrowser> {
  const u = new URL(url);
  const conn = await Deno.connect({ hostname: u.hostname, port: Number(u.port) });
  const key = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(16))));
  await write(
    conn,
    new TextEncoder().encode(
      `GET ${u.pathname}${u.search} HTTP/1.1\r\nHost: ${u.host}\r\nUpgrade: websocket\r\n` +
        `Connection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
    ),
  );
  // Read the 101 answer a byte at a time, so nothing after it is taken from the kernel's buffer.
  let head = "";
  const one = new Uint8Array(1);
  while (!head.endsWith("\r\n\r\n")) {
    if (await conn.read(one) === null) throw new Error("the daemon closed before the upgrade");
    head += String.fromCharCode(one[0]);
  }
  if (!head.startsWith("HTTP/1.1 101")) throw new Error(`upgrade refused: ${head.split("\r\n")[0]}`);
  await write(conn, maskedText(JSON.stringify({ type: "subscribe", sessionId })));
  let closed = false;
  return {
    async drain(timeoutMs = 30_000) {
      const parser = new FrameParser();
      const buf = new Uint8Array(1 << 16);
      let bytes = 0, eof = false;
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        const n = await Promise.race([
          conn.read(buf),
          new Promise<"wait">((r) => setTimeout(() => r("wait"), Math.max(1, deadline - Date.now()))),
        ]);
        if (n === "wait") break;
        if (n === null) {
          eof = true;
          break;
        }
        bytes += n;
        parser.push(buf.subarray(0, n)); // past a close frame, read on: the daemon should then hang up
      }
      return { bytes, closeCode: parser.closeCode, eof };
    },
    close() {
      if (closed) return;
      closed = true;
      try {
        conn.close();
      } catch { /* already closed */ }
    },
  };
}

async function write(conn: Deno.Conn, data: Uint8Array) {
  for (let off = 0; off < data.length;) off += await conn.write(data.subarray(off));
}

/** A client text frame (clients must mask), for payloads under 64 KiB. */
function maskedText(text: string): Uint8Array {
  const payload = new TextEncoder().encode(text);
  const mask = crypto.getRandomValues(new Uint8Array(4));
  const long = payload.length > 125;
  const head = long
    ? [0x81, 0x80 | 126, payload.length >> 8, payload.length & 0xff]
    : [0x81, 0x80 | payload.length];
  const out = new Uint8Array(head.length + 4 + payload.length);
  out.set(head);
  out.set(mask, head.length);
  for (let i = 0; i < payload.length; i++) out[head.length + 4 + i] = payload[i] ^ mask[i % 4];
  return out;
}

/** Walks server frames (unmasked) just far enough to find a close frame and its code. */
class FrameParser {
  closeCode: number | null = null;
  #pending = new Uint8Array(0);

  push(chunk: Uint8Array) {
    const all = new Uint8Array(this.#pending.length + chunk.length);
    all.set(this.#pending);
    all.set(chunk, this.#pending.length);
    let off = 0;
    for (;;) {
      if (all.length - off < 2) break;
      const opcode = all[off] & 0x0f;
      let len = all[off + 1] & 0x7f;
      let hdr = 2;
      if (len === 126) {
        if (all.length - off < 4) break;
        len = (all[off + 2] << 8) | all[off + 3];
        hdr = 4;
      } else if (len === 127) {
        if (all.length - off < 10) break;
        len = Number(new DataView(all.buffer, all.byteOffset + off + 2, 8).getBigUint64(0));
        hdr = 10;
      }
      if (all.length - off < hdr + len) break;
      if (opcode === 0x8 && len >= 2) this.closeCode = (all[off + hdr] << 8) | all[off + hdr + 1];
      off += hdr + len;
    }
    this.#pending = all.slice(off);
  }
}
