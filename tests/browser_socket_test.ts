import assert from "node:assert/strict";
import { waitFor } from "../testing/daemon.ts";
import { startInProcess } from "../testing/inproc.ts";
import { connectAgent, connectBrowser, userEnd } from "../testing/agent.ts";

Deno.test("daemon: browsers get the session list and live events", async (t) => {
  await using d = await startInProcess();
  const browser = await connectBrowser(d.browserUrl);

  await t.step("session_list on connect and on change", async () => {
    const first = await browser.waitFrame((f) => f.type === "session_list");
    assert.deepEqual(first.sessions, []);
    await browser.waitFrame((f) => f.type === "spawn_status");
    const a = await connectAgent(d, { sessionId: "live" });
    await browser.waitSessions((sessions) => sessions.get("live")?.online === true, "live online");
    await a.close();
  });

  await t.step(
    "subscribe delivers persisted events in seq order and every delta once, with catch-up",
    async () => {
      const a = await connectAgent(d, { sessionId: "live" });
      const early = a.send("message_end", userEnd("u1", "before subscribe"));
      await a.waitFrame((f) => f.type === "ack" && f.lastSeq === early);
      browser.send({ type: "subscribe", sessionId: "live", after: 0 });
      const caught = await browser.waitFrame(
        (f) => f.type === "events" && f.sessionId === "live",
        "catch-up",
      );
      assert.deepEqual((caught.events as { seq: number }[]).map((e) => e.seq), [early]);
      a.send("message_start", { message: { role: "assistant", id: "a1" } });
      a.send("message_update", { delta: "Hel" });
      a.send("message_update", { delta: "lo" });
      const end = a.send("message_end", {
        message: {
          role: "assistant",
          id: "a1",
          text: "Hello",
          thinking: null,
          toolCalls: [],
          toolCallId: null,
        },
      });
      await waitFor(
        () =>
          browser.frames.some((f) =>
            f.type === "events" && (f.events as { seq: number }[]).some((e) => e.seq === end)
          ),
        "message_end live",
      );
      const seen = browser.frames.filter((f) => f.type === "events").flatMap((f) =>
        f.events as { seq: number; type: string }[]
      );
      // A delta may come ahead of the stored events before it (lib/ingest.ts `push`); none twice, none lost.
      assert.deepEqual(seen.filter((e) => e.type !== "message_update").map((e) => e.seq), [
        early,
        early + 1,
        end,
      ]);
      assert.deepEqual(seen.map((e) => e.seq).sort((x, y) => x - y), [
        early,
        early + 1,
        early + 2,
        early + 3,
        end,
      ]);
      assert.deepEqual(
        seen.filter((e) => e.type === "message_update").map((e) => (e as unknown as { delta: string }).delta),
        [
          "Hel",
          "lo",
        ],
      );
      browser.send({ type: "unsubscribe", sessionId: "live" });
      browser.send({ type: "subscribe", sessionId: "not a valid id!" });
      const err = await browser.waitFrame((f) => f.type === "error", "error frame");
      assert.match(err.message as string, /session id/);
      await a.close();
    },
  );
  await browser.close();
});

Deno.test("daemon: a browser that stops reading is disconnected, others are not", async () => {
  await using d = await startInProcess();
  // A raw socket that completes the handshake and never reads again.
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: d.port });
  const key = btoa("0123456789abcdef");
  await conn.write(new TextEncoder().encode(
    `GET /ws?token=${d.token} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
  ));
  const head = new Uint8Array(4096);
  const n = await conn.read(head);
  assert.match(new TextDecoder().decode(head.subarray(0, n!)), /101 Switching Protocols/);
  await conn.write(new Uint8Array([0x81, 0x80 | 0, 1, 2, 3, 4])); // masked empty text frame: harmless
  // Subscribe: masked text frame with the JSON.
  const payload = new TextEncoder().encode(JSON.stringify({ type: "subscribe", sessionId: "flood" }));
  const mask = [7, 7, 7, 7];
  const frame = new Uint8Array([
    0x81,
    0x80 | payload.length,
    ...mask,
    ...payload.map((b, i) => b ^ mask[i % 4]),
  ]);
  await conn.write(frame);

  const reader = await connectBrowser(d.browserUrl);
  reader.send({ type: "subscribe", sessionId: "flood" });
  const a = await connectAgent(d, { sessionId: "flood" });
  const big = "y".repeat(60_000);
  const gotSeq = (seq: number) =>
    reader.frames.some((f) =>
      f.type === "events" && (f.events as { seq: number }[]).some((e) => e.seq === seq)
    );
  // Bursts of 20 the healthy reader keeps up with; the stalled one falls further behind with each.
  let last = 0;
  for (let burst = 0; burst < 20; burst++) {
    for (let i = 0; i < 20; i++) last = a.send("message_end", userEnd(`m${burst}-${i}`, big));
    await waitFor(() => gotSeq(last), `reader got seq ${last}`, 30_000);
  }
  // Now drain the stalled socket: it must end in a close frame 4001 before the flood was complete.
  const close = await readUntilClose(conn, 30_000);
  assert.equal(close.code, 4001, "closed as a slow consumer");
  assert.ok(close.dataBytes < 400 * 60_000, `got ${close.dataBytes} bytes, less than the whole flood`);
  assert.equal(reader.socket.readyState, WebSocket.OPEN);
  conn.close();
  await a.close();
  await reader.close();
});

/** Read server frames off a raw socket until a close frame; returns its code and the data bytes before it. */
async function readUntilClose(conn: Deno.Conn, timeoutMs: number) {
  let buf = new Uint8Array(0);
  let dataBytes = 0;
  const timer = setTimeout(() => conn.close(), timeoutMs);
  const chunk = new Uint8Array(1 << 16);
  try {
    while (true) {
      let at = 0;
      while (buf.length - at >= 2) {
        const opcode = buf[at] & 0x0f;
        let len = buf[at + 1] & 0x7f;
        let head = 2;
        if (len === 126) [len, head] = [buf.length - at >= 4 ? (buf[at + 2] << 8) | buf[at + 3] : -1, 4];
        else if (len === 127) {
          len = buf.length - at >= 10
            ? Number(new DataView(buf.buffer, buf.byteOffset + at + 2, 8).getBigUint64(0))
            : -1;
          head = 10;
        }
        if (len < 0 || buf.length - at < head + len) break;
        if (opcode === 8) return { code: (buf[at + head] << 8) | buf[at + head + 1], dataBytes };
        dataBytes += len;
        at += head + len;
      }
      buf = buf.slice(at);
      const n = await conn.read(chunk);
      if (n === null) throw new Error("socket ended without a close frame");
      const next = new Uint8Array(buf.length + n);
      next.set(buf);
      next.set(chunk.subarray(0, n), buf.length);
      buf = next;
    }
  } finally {
    clearTimeout(timer);
  }
}
